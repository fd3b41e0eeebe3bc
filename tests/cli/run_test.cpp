// dlock run: exit status, environment, conflicts and signals.
#include <gtest/gtest.h>
#include <signal.h>

#include <thread>

#include "cli_harness.hpp"

namespace dlock::test {
namespace {

using namespace std::chrono_literals;

TEST(CliRun, PassesTheCommandsExitStatus) {
  cli_sandbox box;
  EXPECT_EQ(box.run({"run", "job", "--", "sh", "-c", "exit 7"}).status, 7);
  EXPECT_EQ(box.run({"run", "job", "--", "true"}).status, 0);
  // Killed by a signal: 128 + the signal, as a shell reports it.
  EXPECT_EQ(box.run({"run", "job", "--", "sh", "-c", "kill -KILL $$"}).status, 128 + SIGKILL);
}

TEST(CliRun, CommandNotFoundIs127) {
  cli_sandbox box;
  auto r = box.run({"run", "job", "--", "/nonexistent/command"});
  EXPECT_EQ(r.status, 127);
  EXPECT_EQ(r.lines().size(), 1u) << r.output;
}

TEST(CliRun, GivesTheCommandNameTokenAndUrl) {
  cli_sandbox box;
  auto show =
      std::vector<std::string>{"run",   "billing/nightly",
                               "--url", box.url(),
                               "--",    "sh",
                               "-c",    "echo \"$DLOCK_NAME|$DLOCK_FENCING_TOKEN|$DLOCK_URL\""};
  auto first = box.run(show);
  ASSERT_EQ(first.status, 0) << first.output;
  auto second = box.run(show);
  ASSERT_EQ(second.status, 0) << second.output;
  auto parse = [&](const std::string& out) {
    auto a = out.find('|');
    auto b = out.find('|', a + 1);
    EXPECT_EQ(out.substr(0, a), "billing/nightly");
    EXPECT_EQ(out.substr(b + 1, out.size() - b - 2), box.url());
    return std::stoull(out.substr(a + 1, b - a - 1));
  };
  auto t1 = parse(first.output);
  auto t2 = parse(second.output);
  EXPECT_GT(t1, 0u);
  EXPECT_GT(t2, t1);
}

TEST(CliRun, UsesTheStateDirectoryByDefault) {
  cli_sandbox box;
  ASSERT_EQ(box.run({"run", "job", "--", "true"}).status, 0);
  EXPECT_TRUE(file_exists(box.state_dir() + "/locks.db"));
}

TEST(CliRun, ConflictsExit75OrTheChosenCode) {
  cli_sandbox box;
  auto holder = box.start({"run", "busy", "--", "sh", "-c", "echo held; exec sleep 60"});
  ASSERT_TRUE(holder.wait_for_line("held", 30s));

  auto n = box.run({"run", "-n", "busy", "--", "echo", "CMD-RAN"});
  EXPECT_EQ(n.status, 75);
  EXPECT_EQ(n.lines().size(), 1u) << n.output;
  EXPECT_EQ(n.output.find("CMD-RAN"), std::string::npos);

  EXPECT_EQ(box.run({"run", "--nonblock", "-E", "9", "busy", "--", "true"}).status, 9);
  EXPECT_EQ(box.run({"run", "--conflict-exit-code", "0", "-n", "busy", "--", "false"}).status, 0);
  auto w = box.run({"run", "-w", "300ms", "busy", "--", "echo", "CMD-RAN"});
  EXPECT_EQ(w.status, 75);
  EXPECT_EQ(w.output.find("CMD-RAN"), std::string::npos);

  // SIGTERM to dlock reaches the command; dlock then releases and reports 128+15.
  holder.signal(SIGTERM);
  EXPECT_EQ(holder.wait(30s), 128 + SIGTERM);
  EXPECT_EQ(box.run({"run", "-n", "busy", "--", "true"}).status, 0);
}

TEST(CliRun, AWaiterRunsOnceTheHolderIsDone) {
  cli_sandbox box;
  auto holder = box.start({"run", "q", "--", "sh", "-c", "echo held; read x; exit 0"});
  ASSERT_TRUE(holder.wait_for_line("held", 30s));
  auto waiter = box.start({"run", "-w", "60s", "q", "--", "echo", "waiter-ran"});
  // Not granted while the holder holds: the status shows it queued.
  for (int i = 0; i < 200; ++i) {
    if (box.run({"status", "q"}).output.find("waiter 1") != std::string::npos) break;
    std::this_thread::sleep_for(50ms);
  }
  EXPECT_TRUE(waiter.running());
  holder.close_stdin();
  EXPECT_EQ(holder.wait(30s), 0);
  EXPECT_TRUE(waiter.wait_for_line("waiter-ran", 30s));
  EXPECT_EQ(waiter.wait(30s), 0);
}

TEST(CliRun, SignalWhileWaitingLeavesNothingQueued) {
  cli_sandbox box;
  auto holder = box.start({"run", "s", "--", "sh", "-c", "echo held; exec sleep 60"});
  ASSERT_TRUE(holder.wait_for_line("held", 30s));
  auto waiter = box.start({"run", "s", "--", "echo", "never"});
  bool queued = false;
  for (int i = 0; i < 200 && !queued; ++i) {
    queued = box.run({"status", "s"}).output.find("waiter 1") != std::string::npos;
    if (!queued) std::this_thread::sleep_for(50ms);
  }
  ASSERT_TRUE(queued);
  waiter.signal(SIGINT);
  EXPECT_EQ(waiter.wait(30s), 128 + SIGINT);
  EXPECT_EQ(box.run({"status", "s"}).output.find("waiter"), std::string::npos);
}

// A ZooKeeper host that does not resolve is named, in the resolver's words, as Redis's is: the
// C client only refuses the host list, and the message said "bad host list?".
TEST(CliRun, AZooKeeperHostThatDoesNotResolveIsNamed) {
  cli_sandbox box;
  auto r = box.run({"run", "-n", "x", "--url", "zk://no-such-host.invalid:2181", "--", "true"});
  EXPECT_EQ(r.status, 69) << r.output;
  EXPECT_NE(r.output.find("cannot resolve no-such-host.invalid: "), std::string::npos) << r.output;
}

}  // namespace
}  // namespace dlock::test
