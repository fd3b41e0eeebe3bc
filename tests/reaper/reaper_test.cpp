// A test process that dies without its destructors (abort, SIGKILL) must not leave its
// fixtures' servers running or their directories behind (support/reaper.hpp).
#include "support/reaper.hpp"

#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <sstream>
#include <string>
#include <thread>

#include "support/net.hpp"
#include "support/process.hpp"

namespace dlock::test {
namespace {

using namespace std::chrono_literals;

struct orphan {
  pid_t pid{-1};
  std::string dir;
};

// Live processes of group `pgid` or working in `dir` (PostgreSQL's children lead groups of
// their own, and run in the data directory). A zombie counts as gone: the orphaned server is
// not our child, and PID 1 of a container may never reap it.
int live_members(pid_t pgid, const std::string& dir) {
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator("/proc")) {
    const auto name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    auto f = proc_stat_fields(static_cast<pid_t>(std::stol(name)));
    if (f.empty() || f[0] == "Z") continue;
    std::error_code ec;
    auto cwd = std::filesystem::read_symlink(e.path() / "cwd", ec).string();
    if ((f.size() > 2 && f[2] == std::to_string(pgid)) || cwd.starts_with(dir + "/")) ++n;
  }
  return n;
}

bool running(pid_t pid) {
  auto f = proc_stat_fields(pid);
  return !f.empty() && f[0] != "Z";
}

// Starts the helper and reads the server it started: "server PID DIR".
orphan start_orphan(child_process& helper) {
  auto line = helper.wait_for_line("server ", 180s);
  if (!line) return {};
  orphan o;
  std::istringstream(line->substr(7)) >> o.pid >> o.dir;
  return o;
}

// True once neither the server, nor any process of its group, nor its directory is left.
bool cleaned_up(const orphan& o, std::chrono::milliseconds timeout) {
  const auto until = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (!running(o.pid) && live_members(o.pid, o.dir) == 0 && !std::filesystem::exists(o.dir))
      return true;
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(50ms);
  }
}

void expect_reaped(const std::string& kind, const std::string& end) {
  child_process helper({DLOCK_SERVER_ORPHAN, kind, end});
  auto o = start_orphan(helper);
  ASSERT_GT(o.pid, 0) << "the helper reported no server";
  ASSERT_FALSE(o.dir.empty());
  EXPECT_TRUE(running(o.pid)) << "the server is not running while its test process is";
  if (end == "kill") helper.signal(SIGKILL);
  auto status = helper.wait(60s);
  ASSERT_TRUE(status.has_value());
  EXPECT_EQ(*status, 128 + (end == "kill" ? SIGKILL : SIGABRT));
  const bool clean = cleaned_up(o, 10s);
  EXPECT_TRUE(clean) << kind << " server " << o.pid << " (directory " << o.dir
                     << ") outlived its test process";
  if (!clean) {  // leave nothing for the next run either
    ::kill(-o.pid, SIGKILL);
    ::kill(o.pid, SIGKILL);
    std::error_code ec;
    std::filesystem::remove_all(o.dir, ec);
  }
}

bool postgres_installed() { return std::filesystem::exists("/usr/lib/postgresql/15/bin/postgres"); }

TEST(reaper, an_aborted_test_leaves_no_redis_server) { expect_reaped("redis", "abort"); }

TEST(reaper, a_killed_test_leaves_no_redis_server) { expect_reaped("redis", "kill"); }

TEST(reaper, a_restarted_redis_server_is_reaped_too) { expect_reaped("redis", "restart"); }

TEST(reaper, an_aborted_test_leaves_no_postgres_or_its_children) {
  if (!postgres_installed()) GTEST_SKIP() << "PostgreSQL 15 is not installed";
  expect_reaped("postgres", "abort");
}

TEST(reaper, a_restarted_postgres_is_reaped_too) {
  if (!postgres_installed()) GTEST_SKIP() << "PostgreSQL 15 is not installed";
  expect_reaped("postgres", "restart");
}

// The other side: what the fixture stopped itself, or never gave it, the watchdog leaves
// alone, even once the test process is gone.
TEST(reaper, a_forgotten_process_is_left_alone) {
  child_process sleeper({"sleep", "60"});
  temp_dir dir("dlock-reaper-test");
  {
    reaper r(dir.path());
    r.watch(sleeper.pid());
    r.forget(sleeper.pid());
  }
  std::this_thread::sleep_for(200ms);
  EXPECT_TRUE(sleeper.running());
  EXPECT_TRUE(std::filesystem::exists(dir.path())) << "quit removed the directory";
}

TEST(reaper, quitting_kills_what_is_still_watched) {
  child_process sleeper({"sleep", "60"});
  {
    reaper r;
    r.watch(sleeper.pid());
  }
  EXPECT_EQ(sleeper.wait(5s), 128 + SIGKILL);
}

}  // namespace
}  // namespace dlock::test
