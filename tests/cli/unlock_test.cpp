// dlock unlock NAME --force: an operator breaks a stuck lock by ending its holder's session.
#include <gtest/gtest.h>

#include "cli_harness.hpp"

namespace dlock::test {
namespace {

using namespace std::chrono_literals;

bool mentions(const cli_result& r, const std::string& text) {
  return r.output.find(text) != std::string::npos;
}

TEST(CliUnlock, ForceEndsTheHoldersSessionAndItsRunIsToldItLost) {
  cli_sandbox box;
  auto holder =
      box.start({"run", "stuck/job", "--ttl", "3s", "--", "sh", "-c", "echo held; sleep 60"});
  ASSERT_TRUE(holder.wait_for_line("held", 30s));

  auto no_force = box.run({"unlock", "stuck/job"});
  EXPECT_EQ(no_force.status, 64) << no_force.output;
  EXPECT_TRUE(mentions(no_force, "--force")) << no_force.output;
  // Not a terminal (the harness's stdin) and no --yes: refused, nothing changed.
  auto unasked = box.run({"unlock", "stuck/job", "--force"});
  EXPECT_EQ(unasked.status, 64) << unasked.output;
  EXPECT_TRUE(mentions(unasked, "--yes")) << unasked.output;
  EXPECT_EQ(box.run({"status", "stuck/job"}).status, 0) << "a refused unlock changed something";

  auto r = box.run({"unlock", "stuck/job", "--force", "--yes"});
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(mentions(r, "lock 'stuck/job': ended the session of token 1")) << r.output;
  EXPECT_EQ(box.run({"status", "stuck/job"}).status, 1) << "still held after --force";
  // The holder's next renewal fails: dlock run stops CMD and exits 70 (lock lost).
  auto code = holder.wait(20s);
  ASSERT_TRUE(code.has_value()) << "dlock run never learnt that its lock was broken";
  EXPECT_EQ(*code, 70);

  auto again = box.run({"unlock", "stuck/job", "--force", "--yes"});
  EXPECT_EQ(again.status, 0) << again.output;
  EXPECT_TRUE(mentions(again, "free, nothing to do")) << again.output;
}

// The README promises that breaking a lock nobody holds is harmless: exit 0, nothing changed,
// so a script may run it unconditionally.
TEST(CliUnlock, ALockNobodyHoldsIsLeftAsItIsAndExits0) {
  cli_sandbox box;
  // No database yet (the sandbox's default): nothing is held, and nothing is created.
  auto none = box.run({"unlock", "job", "--force", "--yes"});
  EXPECT_EQ(none.status, 0) << none.output;
  EXPECT_TRUE(mentions(none, "lock 'job' on sqlite://")) << none.output;
  EXPECT_TRUE(mentions(none, ": free, nothing to do")) << none.output;
  EXPECT_FALSE(file_exists(box.state_dir() + "/locks.db")) << "unlock created the database";

  auto other = box.start({"run", "other", "--", "sh", "-c", "echo held; sleep 60"});
  ASSERT_TRUE(other.wait_for_line("held", 30s));
  auto free_lock = box.run({"unlock", "job", "--force", "--yes"});
  EXPECT_EQ(free_lock.status, 0) << free_lock.output;
  EXPECT_TRUE(mentions(free_lock, ": free, nothing to do")) << free_lock.output;
  // Nothing to confirm, so no --yes is needed either, even without a terminal.
  auto unasked = box.run({"unlock", "job", "--force"});
  EXPECT_EQ(unasked.status, 0) << unasked.output;
  EXPECT_TRUE(mentions(unasked, ": free, nothing to do")) << unasked.output;
  EXPECT_EQ(box.run({"status", "other"}).status, 0) << "another lock's holder was touched";
}

// An election's leader is broken the same way, and the output calls it an election.
TEST(CliUnlock, ForceOnAnElectionSaysElection) {
  cli_sandbox box;
  auto leader = box.start({"elect", "stuck/primary", "--ttl", "3s", "--value", "node-a", "--", "sh",
                           "-c", "echo leading; sleep 60"});
  ASSERT_TRUE(leader.wait_for_line("leading", 30s));
  auto r = box.run({"unlock", "stuck/primary", "--force", "--yes"});
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(mentions(r, "election 'stuck/primary': ended the session of")) << r.output;
  auto code = leader.wait(20s);
  ASSERT_TRUE(code.has_value()) << "dlock elect never learnt that its leadership was broken";
  EXPECT_EQ(*code, 70);
}

}  // namespace
}  // namespace dlock::test
