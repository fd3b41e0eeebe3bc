// SQLite leases under real wall-clock steps (issue 12, item 10): worker processes run with
// libfaketime preloaded and the test steps their CLOCK_REALTIME by an hour while they hold or
// wait. Leases live on CLOCK_BOOTTIME, which every process of the host shares and which never
// steps, so no step may give a second holder, end a live hold, or end a waiter's session.
#include <gtest/gtest.h>
#include <time.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>

#include "support/faketime.hpp"
#include "support/net.hpp"
#include "support/process.hpp"

namespace dlock::test {
namespace {

using namespace std::chrono_literals;

std::int64_t clock_ms(clockid_t id) {
  timespec ts{};
  ::clock_gettime(id, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1'000'000;
}

child_process worker(const std::vector<std::string>& args,
                     std::map<std::string, std::string> env = {}) {
  std::vector<std::string> argv{DLOCK_TEST_WORKER};
  argv.insert(argv.end(), args.begin(), args.end());
  child_process::options o;
  o.env = std::move(env);
  return child_process(argv, o);
}

// "result WHAT ELAPSED_MS" from a `try` worker.
struct try_result {
  std::string what;
  long elapsed_ms{-1};
};
try_result read_result(child_process& w, std::chrono::milliseconds timeout) {
  auto line = w.wait_for_line("result ", timeout);
  if (!line) return {"(no result)", -1};
  auto rest = line->substr(7);
  auto space = rest.rfind(' ');
  return {rest.substr(0, space), std::stol(rest.substr(space + 1))};
}

class sqlite_clock : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(libfaketime_path().empty())
        << "libfaketime is missing: install the Debian packages faketime libfaketime";
  }
  std::string url() const { return "sqlite://" + dir_.path() + "/locks.db?ttl=3s"; }
  std::string file(const std::string& name) const { return dir_.path() + "/" + name; }

  temp_dir dir_{"dlock-sqlite-clock"};
};

// The premise of the other tests: a step moves the faked process's wall clock and nothing else.
TEST_F(sqlite_clock, libfaketime_steps_only_the_wall_clock_of_a_running_process) {
  stepped_clock c(file("premise.clock"));
  c.set("+1h");
  auto w = worker({"clocks"}, c.env());
  auto line = w.wait_for_line("clocks ", 10s);
  ASSERT_TRUE(line.has_value());
  auto rest = line->substr(7);
  auto real = std::stoll(rest.substr(0, rest.find(' ')));
  auto boot = std::stoll(rest.substr(rest.find(' ') + 1));
  EXPECT_NEAR(static_cast<double>(real - clock_ms(CLOCK_REALTIME)), 3'600'000.0, 30'000.0);
  EXPECT_NEAR(static_cast<double>(boot - clock_ms(CLOCK_BOOTTIME)), 0.0, 30'000.0);
}

// A holds with ttl=3s; A's wall clock steps back an hour. A keeps renewing; nobody else may
// be granted while it holds (the old code wrote a lease already in the past: B got the lock
// within a second while A still reported "held").
TEST_F(sqlite_clock, a_holder_whose_wall_clock_steps_back_stays_the_only_holder) {
  stepped_clock a_clock(file("a.clock"));
  auto a = worker({"hold", url(), "k"}, a_clock.env());
  ASSERT_TRUE(a.wait_for_line("granted", 20s).has_value());
  a_clock.set("-1h");
  auto b = worker({"try", url(), "k", "4000"});
  auto r = read_result(b, 20s);
  EXPECT_EQ(r.what, "timed_out") << "a second holder after " << r.elapsed_ms << " ms";
  a.write_stdin("held\n");
  EXPECT_EQ(a.wait_for_line("held", 10s).value_or("(none)"), "held yes");
  a.write_stdin("release\n");
  EXPECT_EQ(a.wait_for_line("released", 10s).value_or("(none)"), "released");
}

// An NTP step forward of an hour on the whole host: every process's wall clock jumps at once
// (one offset file for all), and a newcomer starts after the step. The holder keeps the lock
// and the newcomer is not granted (the old code granted it at once and told the holder
// "lost" only at its next renewal).
TEST_F(sqlite_clock, a_host_wide_step_forward_neither_frees_nor_ends_a_live_hold) {
  stepped_clock host(file("host.clock"));
  auto a = worker({"hold", url(), "k"}, host.env());
  ASSERT_TRUE(a.wait_for_line("granted", 20s).has_value());
  host.set("+1h");
  std::this_thread::sleep_for(200ms);
  auto b = worker({"try", url(), "k", "4000"}, host.env());
  auto r = read_result(b, 20s);
  EXPECT_EQ(r.what, "timed_out") << "a second holder after " << r.elapsed_ms << " ms";
  a.write_stdin("held\n");
  EXPECT_EQ(a.wait_for_line("held", 10s).value_or("(none)"), "held yes");
  a.write_stdin("release\n");
  EXPECT_EQ(a.wait_for_line("released", 10s).value_or("(none)"), "released");
}

// A waiter's wall clock steps forward while it waits: it keeps waiting until its own deadline
// (timed_out at ~5 s; the old code ended its session at its first renewal, after ~1 s).
TEST_F(sqlite_clock, a_waiter_whose_wall_clock_steps_forward_waits_until_its_deadline) {
  auto a = worker({"hold", url(), "k"});
  ASSERT_TRUE(a.wait_for_line("granted", 20s).has_value());
  stepped_clock w_clock(file("w.clock"));
  auto w = worker({"try", url(), "k", "5000"}, w_clock.env());
  ASSERT_TRUE(w.wait_for_line("trying", 20s).has_value());
  std::this_thread::sleep_for(300ms);
  w_clock.set("+1h");
  auto r = read_result(w, 20s);
  EXPECT_EQ(r.what, "timed_out");
  EXPECT_GE(r.elapsed_ms, 4900) << r.what;
  a.write_stdin("release\n");
  EXPECT_EQ(a.wait_for_line("released", 10s).value_or("(none)"), "released");
}

}  // namespace
}  // namespace dlock::test
