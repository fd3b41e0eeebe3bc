// dlock run when the lock is lost while CMD runs: CMD gets SIGTERM (SIGKILL after the grace
// period) and dlock exits 70. Also when the loss is found only after CMD has ended (at the
// release): nothing then says CMD ran alone, so the run is still a lost one.
#include <gtest/gtest.h>
#include <signal.h>

#include <cstdio>
#include <fstream>

#include "cli_harness.hpp"

namespace dlock::test {
namespace {

using namespace std::chrono_literals;

// Pauses the holder past its 1 s lease, lets another process take the lock, resumes it.
int lose_lock_while_running(const cli_sandbox& box, child_process& holder) {
  EXPECT_TRUE(holder.wait_for_line("started", 30s));
  holder.signal(SIGSTOP);
  // Blocks until the paused holder's lease has lapsed, then runs.
  auto other = box.run(
      {"run", "--url", box.url() + "?ttl=1s", "-w", "30s", "lost", "--", "echo", "other-ran"});
  EXPECT_EQ(other.status, 0) << other.output;
  EXPECT_NE(other.output.find("other-ran"), std::string::npos);
  holder.signal(SIGCONT);
  return holder.wait(60s).value_or(-1);
}

TEST(CliRunLost, CommandIsTerminatedAndDlockExits70) {
  cli_sandbox box;
  std::string script =
      "trap 'echo got-term; exit 0' TERM; echo started; while :; do sleep 0.05; done";
  auto holder =
      box.start({"run", "--url", box.url() + "?ttl=1s", "lost", "--", "sh", "-c", script});
  EXPECT_EQ(lose_lock_while_running(box, holder), 70);
  bool got_term = false;
  while (auto line = holder.read_line(5s)) got_term = got_term || *line == "got-term";
  EXPECT_TRUE(got_term);
}

TEST(CliRunLost, CommandIgnoringSigtermIsKilledAfterTheGrace) {
  cli_sandbox box;
  std::string script = "trap '' TERM; echo started; while :; do sleep 0.05; done";
  auto holder = box.start({"run", "--url", box.url() + "?ttl=1s", "--grace", "300ms", "lost", "--",
                           "sh", "-c", script});
  EXPECT_EQ(lose_lock_while_running(box, holder), 70);
}

// A fault trial: the lock file deleted (rm locks.db*) while CMD ran. A second run was granted
// in the new file, token 1 again, while the first ran on and exited 0. Now the first is told
// at its next renewal, stops CMD, exits 70 and says why.
TEST(CliRunLost, DeletedLockFileIsALostRunThatSaysWhy) {
  cli_sandbox box;
  std::string script = "echo started; while :; do sleep 0.05; done";
  auto holder =
      box.start({"run", "--url", box.url() + "?ttl=1s", "deleted", "--", "sh", "-c", script});
  ASSERT_TRUE(holder.wait_for_line("started", 30s));
  for (const char* suffix : {"", "-wal", "-shm"})
    std::remove((box.dir() + "/locks.db" + suffix).c_str());
  auto other =
      box.run({"run", "--url", box.url(), "-w", "0", "deleted", "--", "echo", "other-ran"});
  EXPECT_EQ(other.status, 0) << other.output;
  EXPECT_EQ(holder.wait(30s).value_or(-1), 70);
  std::string out;
  while (auto line = holder.read_line(1s)) out += *line + "\n";
  EXPECT_NE(out.find("was deleted, renamed or replaced"), std::string::npos) << out;
}

// The new-user trial: after `unlock --force`, a second run was granted while the first CMD
// still ran; the first CMD then ended before a renewal noticed, and dlock exited 0 (metrics:
// "ran"), only warning that it "could not confirm the release".
TEST(CliRunLost, LossFoundOnlyAtTheReleaseIsStillALostRun) {
  cli_sandbox box;
  const std::string go = box.dir() + "/go", metrics = box.dir() + "/run.prom";
  // A long TTL: no renewal (every TTL/3) comes between the unlock and CMD's end.
  auto holder =
      box.start({"run", "--url", box.url() + "?ttl=60s", "--metrics-file", metrics, "forced", "--",
                 "sh", "-c", "echo started; while [ ! -e " + go + " ]; do sleep 0.02; done"});
  ASSERT_TRUE(holder.wait_for_line("started", 30s));
  auto unlock = box.run({"unlock", "--url", box.url(), "forced", "--force", "--yes"});
  ASSERT_EQ(unlock.status, 0) << unlock.output;
  auto other = box.run({"run", "--url", box.url(), "-n", "forced", "--", "echo", "other-ran"});
  ASSERT_EQ(other.status, 0) << "the forced unlock did not free the lock: " << other.output;
  std::ofstream(go).put('x');
  auto status = holder.wait(30s);
  ASSERT_TRUE(status.has_value()) << "dlock run did not exit";
  std::string out;
  while (auto line = holder.read_line(1s)) out += *line + "\n";
  EXPECT_EQ(*status, 70) << out;
  EXPECT_NE(out.find("another owner may have been granted it while CMD ran"), std::string::npos)
      << out;
  EXPECT_NE(read_file(metrics).find("outcome=\"lost\"} 1"), std::string::npos)
      << read_file(metrics);
}

// dlock stopped past its lease while CMD runs on and ends: when dlock continues, CMD is gone
// and the lease has lapsed. CMD's guard says when CMD ended (0.3 s in, the lease lasting 1 s),
// so CMD ran under the lock: its status, and a line that says the lease ran out after it (it
// used to be a lost run, 70: dlock could not place the lapse before or after CMD's end).
TEST(CliRunLost, CmdThatEndsWithinTheLeaseWhileDlockIsStoppedKeepsItsStatus) {
  cli_sandbox box;
  auto holder = box.start({"run", "--url", box.url() + "?ttl=1s", "paused", "--", "sh", "-c",
                           "echo started; sleep 0.3"});
  ASSERT_TRUE(holder.wait_for_line("started", 30s));
  holder.signal(SIGSTOP);
  auto other = box.run(
      {"run", "--url", box.url() + "?ttl=1s", "-w", "30s", "paused", "--", "echo", "other-ran"});
  EXPECT_EQ(other.status, 0) << other.output;
  holder.signal(SIGCONT);
  auto status = holder.wait(30s);
  ASSERT_TRUE(status.has_value()) << "dlock run did not exit";
  std::string out;
  while (auto line = holder.read_line(1s)) out += *line + "\n";
  EXPECT_EQ(*status, 0) << out;
  EXPECT_NE(out.find("lock 'paused' outlived 'sh', but its lease ran out before dlock could "
                     "release it (dlock was stopped"),
            std::string::npos)
      << out;
}

}  // namespace
}  // namespace dlock::test
