// The fault "dlock-run wrapper killed" (issue 12; see tests/fault/README.md): a critical
// section runs as `dlock run`'s CMD, with a grandchild doing the work, and the dlock wrapper is
// SIGKILLed. The checker reads the shared log: once the next holder is granted, no line of an
// earlier holder's critical section may follow, and no process of it may be running. On every
// backend whose contenders are processes (all but memory://), each on its own fresh server.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/wait.h>

#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <sstream>
#include <thread>

#include "cli_harness.hpp"
#include "support/mariadb_server.hpp"
#include "support/postgres_server.hpp"
#include "support/redis_server.hpp"
#include "support/zk_server.hpp"

namespace dlock::test {
namespace {

using namespace std::chrono_literals;

struct backend_case {
  std::string name;
  // Starts the server (if any) and returns the URL; the server lives in `keep`.
  std::function<std::string(const cli_sandbox&, std::shared_ptr<void>& keep)> start;
};

template <class Server>
std::shared_ptr<Server> started(std::shared_ptr<void>& keep) {
  auto s = std::make_shared<Server>();
  keep = s;
  return s;
}

// Every backend whose contenders can be processes: the fault is the wrapper's, so each gets it.
std::vector<backend_case> cases() {
  return {
      {"sqlite", [](const cli_sandbox& box, std::shared_ptr<void>&) { return box.url(); }},
      {"redis",
       [](const cli_sandbox&, std::shared_ptr<void>& keep) {
         return "redis://" + started<redis_server>(keep)->address();
       }},
      {"redlock",
       [](const cli_sandbox&, std::shared_ptr<void>& keep) {
         auto three = std::make_shared<std::vector<std::unique_ptr<redis_server>>>();
         keep = three;
         std::string url = "redlock://";
         for (int i = 0; i < 3; ++i) {
           three->push_back(std::make_unique<redis_server>());
           url += (i ? "," : "") + three->back()->address();
         }
         return url;
       }},
      {"zookeeper",
       [](const cli_sandbox&, std::shared_ptr<void>& keep) {
         return "zk://" + started<zk_server>(keep)->hosts() + "/dlock-cli";
       }},
      {"postgres",
       [](const cli_sandbox&, std::shared_ptr<void>& keep) {
         return started<postgres_server>(keep)->url();
       }},
      {"postgres_advisory",
       [](const cli_sandbox&, std::shared_ptr<void>& keep) {
         return started<postgres_server>(keep)->url("mode=advisory");
       }},
      {"mysql", [](const cli_sandbox&,
                   std::shared_ptr<void>& keep) { return started<mariadb_server>(keep)->url(); }},
      {"mysql_advisory",
       [](const cli_sandbox&, std::shared_ptr<void>& keep) {
         return started<mariadb_server>(keep)->url("mode=advisory");
       }},
  };
}

std::vector<std::string> lines_of(const std::string& path) {
  std::istringstream in(read_file(path));
  std::vector<std::string> out;
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

class CliWrapperKilled : public ::testing::TestWithParam<backend_case> {};

// The critical section, run by `sh -c CS LOG`: a grandchild appends "cs TOKEN" to LOG every
// 20 ms until it is stopped; the shell prints "pids SHELL GRANDCHILD".
constexpr const char* critical_section =
    "while :; do echo \"cs $DLOCK_FENCING_TOKEN\" >> \"$0\"; sleep 0.02; done & "
    "echo \"pids $$ $!\"; wait";

std::string with_ttl(const std::string& url, const std::string& ttl) {
  return url + (url.find('?') == std::string::npos ? "?ttl=" : "&ttl=") + ttl;
}

// The checker: lines of an earlier holder's critical section ("cs T") after "granted T2",
// T < T2.
int late_lines(const std::string& log) {
  std::string granted;
  int violations = 0;
  for (const auto& l : lines_of(log)) {
    if (l.starts_with("granted ")) granted = l.substr(8);
    if (l.starts_with("cs ") && !granted.empty() && std::stoull(l.substr(3)) < std::stoull(granted))
      ++violations;
  }
  return violations;
}

TEST_P(CliWrapperKilled, NoCommandRunsWithoutTheLock) {
  cli_sandbox box;
  std::shared_ptr<void> server;
  std::string url = with_ttl(GetParam().start(box, server), "1s");
  std::string log = box.dir() + "/log";
  std::string cs = critical_section;
  std::string next =
      "echo \"granted $DLOCK_FENCING_TOKEN\" >> \"$0\"; sleep 0.3; "
      "echo \"released $DLOCK_FENCING_TOKEN\" >> \"$0\"";
  std::vector<pid_t> victims;
  constexpr int rounds = 2;
  for (int round = 0; round < rounds; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    auto holder = box.start({"run", "--url", url, "w", "--", "sh", "-c", cs, log});
    auto pids = holder.wait_for_line("pids ", 30s);
    ASSERT_TRUE(pids) << "the critical section did not start";
    std::istringstream in(pids->substr(5));
    for (pid_t p; in >> p;) victims.push_back(p);
    std::this_thread::sleep_for(150ms);  // inside its critical section
    holder.signal(SIGKILL);
    EXPECT_EQ(holder.wait(10s), 128 + SIGKILL);
    auto r = box.run({"run", "--url", url, "-w", "30s", "w", "--", "sh", "-c", next, log});
    ASSERT_EQ(r.status, 0) << r.output;
  }
  EXPECT_EQ(late_lines(log), 0) << "a killed wrapper's CMD ran on after the next grant:\n"
                                << read_file(log);
  for (pid_t p : victims) {
    EXPECT_FALSE(running(p)) << "pid " << p << " of a killed wrapper's CMD still runs";
    if (running(p)) ::kill(p, SIGKILL);
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, CliWrapperKilled, ::testing::ValuesIn(cases()),
                         [](const auto& info) { return info.param.name; });

// The window between dlock's death and its guard's kill of CMD's group, held open: the guard
// is held in a ptrace stop before dlock is SIGKILLed (a SIGSTOP would not do: the kernel sends
// an orphaned process group with a stopped member SIGHUP and SIGCONT). On the backends that free a
// dead holder at once (its process or connection gone), the lock must stay held while the guard, a
// fork of dlock that still acts for it, lives; once it runs on and kills the group, the next holder
// is granted. Backends that wait for the lease to end hold it anyway.
std::vector<backend_case> freed_at_once() {
  std::vector<backend_case> out;
  for (auto& c : cases()) {
    if (c.name.starts_with("sqlite") || c.name.starts_with("postgres") ||
        c.name.starts_with("mysql")) {
      out.push_back(c);
    }
  }
  return out;
}

class CliWrapperKilledGuardPaused : public ::testing::TestWithParam<backend_case> {};

TEST_P(CliWrapperKilledGuardPaused, TheLockStaysHeldUntilTheGuardHasKilledCmd) {
  cli_sandbox box;
  std::shared_ptr<void> server;
  std::string url = with_ttl(GetParam().start(box, server), "20s");
  std::string log = box.dir() + "/log";
  std::string cs = critical_section;
  auto holder = box.start({"run", "--url", url, "w", "--", "sh", "-c", cs, log});
  auto pids = holder.wait_for_line("pids ", 30s);
  ASSERT_TRUE(pids) << "the critical section did not start";
  std::istringstream in(pids->substr(5));
  pid_t sh = 0, worker = 0;
  in >> sh >> worker;
  pid_t guard = ::getpgid(sh);  // the guard leads CMD's process group
  ASSERT_GT(guard, 1);
  ASSERT_EQ(::ptrace(PTRACE_SEIZE, guard, nullptr, nullptr), 0) << std::strerror(errno);
  ASSERT_EQ(::ptrace(PTRACE_INTERRUPT, guard, nullptr, nullptr), 0) << std::strerror(errno);
  int st = 0;
  ASSERT_EQ(::waitpid(guard, &st, __WALL), guard);
  ASSERT_TRUE(WIFSTOPPED(st));
  holder.signal(SIGKILL);
  EXPECT_EQ(holder.wait(10s), 128 + SIGKILL);
  ASSERT_TRUE(running(worker));
  auto busy = box.run({"run", "--url", url, "-n", "w", "--", "true"});
  EXPECT_EQ(busy.status, 75) << "granted while a killed wrapper's CMD still runs: " << busy.output;
  ASSERT_EQ(::ptrace(PTRACE_DETACH, guard, nullptr, nullptr), 0) << std::strerror(errno);
  std::string next = "echo \"granted $DLOCK_FENCING_TOKEN\" >> \"$0\"";
  auto r = box.run({"run", "--url", url, "-w", "30s", "w", "--", "sh", "-c", next, log});
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(late_lines(log), 0) << read_file(log);
  for (pid_t p : {sh, worker}) {
    EXPECT_FALSE(running(p)) << "pid " << p << " of a killed wrapper's CMD still runs";
    if (running(p)) ::kill(p, SIGKILL);
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, CliWrapperKilledGuardPaused,
                         ::testing::ValuesIn(freed_at_once()),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace dlock::test
