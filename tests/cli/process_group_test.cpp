// Issue 12, items 1 and 2: CMD never runs without the lock. CMD runs in its own process group;
// when dlock dies by any signal (SIGKILL included) or loses the lock, the whole group goes --
// grandchildren too -- before anyone else can be granted.
#include <gtest/gtest.h>
#include <signal.h>

#include <fstream>
#include <sstream>
#include <thread>

#include "cli_harness.hpp"

namespace dlock::test {
namespace {

using namespace std::chrono_literals;

// "pids A B" -> {A, B}.
std::vector<pid_t> parse_pids(const std::optional<std::string>& line) {
  std::vector<pid_t> out;
  if (!line) return out;
  std::istringstream in(line->substr(5));
  for (pid_t p; in >> p;) out.push_back(p);
  return out;
}

// Kills what a failed test would otherwise leave running.
struct group_cleanup {
  std::vector<pid_t> pids;
  ~group_cleanup() {
    for (pid_t p : pids) {
      if (running(p)) ::kill(p, SIGKILL);
    }
  }
};

// A CMD for the next holder that reports which of `pids` it finds running when it is granted.
std::vector<std::string> check_cmd(const std::vector<pid_t>& pids) {
  std::vector<std::string> cmd{
      "sh", "-c",
      "for p in \"$@\"; do s=$(cut -d' ' -f3 /proc/$p/stat 2>/dev/null); "
      "if [ -n \"$s\" ] && [ \"$s\" != Z ]; then echo \"alive $p\"; fi; done; echo checked",
      "sh"};
  for (pid_t p : pids) cmd.push_back(std::to_string(p));
  return cmd;
}

class CliRunDeath : public ::testing::TestWithParam<int> {};

// kill -SIG of `dlock run k -- sh -c 'sleep 30 & wait'`: sh and its sleep are gone promptly,
// and the next `dlock run` on k is granted only once they are.
TEST_P(CliRunDeath, TakesTheWholeCommandGroupWithIt) {
  const int sig = GetParam();
  cli_sandbox box;
  auto holder =
      box.start({"run", "k", "--", "sh", "-c", "sleep 30 & echo \"pids $$ $!\"; wait; echo done"});
  auto pids = parse_pids(holder.wait_for_line("pids ", 30s));
  ASSERT_EQ(pids.size(), 2u);
  group_cleanup cleanup{pids};
  ASSERT_TRUE(running(pids[0]) && running(pids[1]));

  holder.signal(sig);
  // Started at once: on SQLite a SIGKILLed holder's lock is free the moment it is gone.
  std::vector<std::string> next{"run", "-w", "20s", "k", "--"};
  auto check = check_cmd(pids);
  next.insert(next.end(), check.begin(), check.end());
  auto r = box.run(next);
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("checked"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("alive"), std::string::npos) << "granted while the first CMD still ran:\n"
                                                       << r.output;

  auto status = holder.wait(10s);
  ASSERT_TRUE(status.has_value());
  EXPECT_EQ(*status, 128 + sig);
  for (int i = 0; i < 100 && (running(pids[0]) || running(pids[1])); ++i)
    std::this_thread::sleep_for(50ms);
  EXPECT_FALSE(running(pids[0])) << "sh survived";
  EXPECT_FALSE(running(pids[1])) << "the grandchild survived";
  EXPECT_EQ(box.run({"run", "-n", "k", "--", "true"}).status, 0);
}

INSTANTIATE_TEST_SUITE_P(Signals, CliRunDeath,
                         ::testing::Values(SIGKILL, SIGQUIT, SIGUSR1, SIGTERM, SIGHUP),
                         [](const auto& info) { return std::string(sigabbrev_np(info.param)); });

// SIGSTOP of dlock past its 1 s lease, another client granted, SIGCONT: CMD's whole group --
// the grandchild too -- gets SIGTERM and dlock exits 70. CMD waits for the grandchild in its
// trap: once CMD exits, the rest of the group is SIGKILLed at once, which under load could
// come before the grandchild had run its own trap.
TEST(CliRunLost, TheWholeGroupGetsSigterm) {
  cli_sandbox box;
  std::string script =
      "trap 'echo sh-term; wait; exit 0' TERM; "
      "sh -c 'trap \"echo gc-term; exit 0\" TERM; while :; do sleep 0.05; done' & "
      "echo \"pids $$ $!\"; "
      "while :; do sleep 0.05; done";
  auto holder = box.start(
      {"run", "--url", box.url() + "?ttl=1s", "--grace", "10s", "lost", "--", "sh", "-c", script});
  auto pids = parse_pids(holder.wait_for_line("pids ", 30s));
  ASSERT_EQ(pids.size(), 2u);
  group_cleanup cleanup{pids};
  holder.signal(SIGSTOP);
  auto other = box.run(
      {"run", "--url", box.url() + "?ttl=1s", "-w", "30s", "lost", "--", "echo", "other-ran"});
  EXPECT_EQ(other.status, 0) << other.output;
  EXPECT_NE(other.output.find("other-ran"), std::string::npos);
  holder.signal(SIGCONT);
  EXPECT_EQ(holder.wait(30s), 70);
  bool sh_term = false, gc_term = false;
  while (auto line = holder.read_line(3s)) {
    sh_term = sh_term || *line == "sh-term";
    gc_term = gc_term || *line == "gc-term";
  }
  EXPECT_TRUE(sh_term);
  EXPECT_TRUE(gc_term) << "the grandchild was not signalled";
  for (int i = 0; i < 100 && running(pids[1]); ++i) std::this_thread::sleep_for(50ms);
  EXPECT_FALSE(running(pids[1])) << "the grandchild runs on without the lock";
}

// The guard (CMD's parent, leading its process group) killed from outside: CMD and what it
// started go, and dlock says why it exits 137. A tester's run ended 137 with no word.
TEST(CliRunGuard, AKilledGuardIsSaidAndTakesTheGroupWithIt) {
  cli_sandbox box;
  auto holder = box.start(
      {"run", "guarded", "--", "sh", "-c", "sleep 30 & echo \"pids $$ $!\"; wait; echo done"});
  auto pids = parse_pids(holder.wait_for_line("pids ", 30s));
  ASSERT_EQ(pids.size(), 2u);
  group_cleanup cleanup{pids};
  const pid_t guard = ::getpgid(pids[0]);
  ASSERT_GT(guard, 1);
  ASSERT_NE(guard, pids[0]);
  ASSERT_EQ(::kill(guard, SIGKILL), 0);
  EXPECT_EQ(holder.wait(30s), 137);
  std::string said;
  while (auto line = holder.read_line(3s)) said += *line + "\n";
  EXPECT_NE(said.find("the guard of 'sh'"), std::string::npos) << said;
  EXPECT_NE(said.find("killed by signal 9"), std::string::npos) << said;
  for (int i = 0; i < 100 && (running(pids[0]) || running(pids[1])); ++i)
    std::this_thread::sleep_for(50ms);
  EXPECT_FALSE(running(pids[0])) << "sh survived";
  EXPECT_FALSE(running(pids[1])) << "the grandchild survived";
  EXPECT_EQ(box.run({"run", "-n", "guarded", "--", "true"}).status, 0);
}

}  // namespace
}  // namespace dlock::test
