// dlock run when the lock is lost while CMD runs: CMD gets SIGTERM (SIGKILL after the grace
// period) and dlock exits 70.
#include <gtest/gtest.h>
#include <signal.h>

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

}  // namespace
}  // namespace dlock::test
