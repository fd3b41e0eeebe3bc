// A frozen `dlock run` (SIGSTOP, a debugger) cannot renew, so its lease lapses and another
// client is granted: its guard, which is not frozen, must have stopped CMD by then. Before the
// guard enforced the lease, CMD ran on beside the next holder until dlock was continued.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <sstream>
#include <thread>

#include "cli_harness.hpp"

namespace dlock::test {
namespace {

using namespace std::chrono_literals;

std::vector<std::string> written_lines(const std::string& path) {
  std::istringstream in(read_file(path));
  std::vector<std::string> out;
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

// The first line starting with `prefix` and the last, as indexes into `lines` (-1: none). All
// writers append to one file, so the order of its lines is the order of the writes: no clock
// is compared.
std::pair<int, int> first_and_last_with(const std::vector<std::string>& lines,
                                        const std::string& prefix) {
  int first = -1, last = -1;
  for (int i = 0; i < static_cast<int>(lines.size()); ++i) {
    if (!lines[i].starts_with(prefix)) continue;
    if (first < 0) first = i;
    last = i;
  }
  return {first, last};
}

TEST(CliFrozenHolder, CmdStopsBeforeTheNextHolderIsGranted) {
  cli_sandbox box;
  std::string log = box.dir() + "/st.log";
  auto holder = box.start({"run", "--ttl", "1s", "--grace", "1s", "stp", "--", "sh", "-c",
                           "echo \"pids $$\"; "
                           "while :; do echo \"A $(date +%s.%N)\" >> \"$0\"; sleep 0.05; done",
                           log});
  auto pids = holder.wait_for_line("pids ", 30s);
  ASSERT_TRUE(pids) << "CMD did not start";
  const pid_t sh = std::stoi(pids->substr(5));
  // The process the test started is dlock's main process, the one that holds the session;
  // CMD runs in the guard's process group, which a SIGSTOP of dlock does not reach.
  const pid_t guard = ::getpgid(sh);
  ASSERT_GT(guard, 1);
  ASSERT_NE(guard, holder.pid());
  ASSERT_NE(guard, sh);
  std::this_thread::sleep_for(300ms);
  holder.signal(SIGSTOP);

  auto next = box.run({"run", "--ttl", "1s", "-w", "5s", "stp", "--", "sh", "-c",
                       "echo \"B start $(date +%s.%N)\" >> \"$0\"; sleep 2; "
                       "echo \"B end $(date +%s.%N)\" >> \"$0\"",
                       log});
  holder.signal(SIGCONT);
  EXPECT_EQ(next.status, 0) << next.output;
  auto status = holder.wait(15s);
  std::string said;
  while (auto line = holder.read_line(1s)) said += *line + "\n";
  EXPECT_EQ(status, 70) << said;
  EXPECT_NE(said.find("lost"), std::string::npos) << said;

  auto lines = written_lines(log);
  auto [a_first, a_last] = first_and_last_with(lines, "A ");
  auto [b_start, b_unused] = first_and_last_with(lines, "B start");
  ASSERT_GE(a_first, 0) << read_file(log);
  ASSERT_GE(b_start, 0) << read_file(log);
  EXPECT_LT(a_last, b_start) << "CMD ran on beside the next holder:\n" << read_file(log);
  for (int i = 0; i < 100 && running(sh); ++i) std::this_thread::sleep_for(50ms);
  EXPECT_FALSE(running(sh)) << "CMD survived its lost lease";
  if (running(sh)) ::kill(sh, SIGKILL);
}

// A CMD that ignores SIGTERM gets SIGKILL --grace later from the guard alone: dlock, still
// stopped, cannot send it.
TEST(CliFrozenHolder, TheGuardKillsACmdThatIgnoresSigtermAfterGrace) {
  cli_sandbox box;
  auto holder = box.start({"run", "--ttl", "1s", "--grace", "500ms", "deaf", "--", "sh", "-c",
                           "trap '' TERM; echo \"pids $$\"; while :; do sleep 0.05; done"});
  auto pids = holder.wait_for_line("pids ", 30s);
  ASSERT_TRUE(pids) << "CMD did not start";
  const pid_t sh = std::stoi(pids->substr(5));
  holder.signal(SIGSTOP);
  // The lease ends within its TTL of the stop; then --grace.
  for (int i = 0; i < 100 && running(sh); ++i) std::this_thread::sleep_for(50ms);
  EXPECT_FALSE(running(sh)) << "CMD outlived its lease and --grace while dlock was stopped";
  if (running(sh)) ::kill(sh, SIGKILL);
  holder.signal(SIGCONT);
  auto status = holder.wait(15s);
  std::string said;
  while (auto line = holder.read_line(1s)) said += *line + "\n";
  EXPECT_EQ(status, 70) << said;
  // The guard's own SIGKILL of its group (itself in it) is no kill from outside: dlock said
  // "the guard ... was killed by signal 9 ... (exit 137)" and exited 70 (a tester's).
  EXPECT_EQ(said.find("was killed by signal"), std::string::npos) << said;
}

// The guard must not take renewals that come every TTL/3 for a lapse: a CMD that outlives
// several leases ends with its own status.
TEST(CliFrozenHolder, TheGuardLeavesAHealthyHoldAlone) {
  cli_sandbox box;
  auto r = box.run({"run", "--ttl", "1s", "healthy", "--", "sh", "-c", "sleep 3.5; exit 3"});
  EXPECT_EQ(r.status, 3) << r.output;
  EXPECT_EQ(r.output.find("lost"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace dlock::test
