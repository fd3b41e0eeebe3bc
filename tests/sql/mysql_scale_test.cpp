// Lease mode's waiters on MariaDB block on their predecessor's doorbell (my_bell.hpp) instead
// of polling (issue 17): a release costs the same statements however many wait behind it
// (counted with the server's own Questions, not timed), a cancel or a deadline ends a wait at
// once, and the end of a holder's connection wakes its waiter without waiting out the lease.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <dlock/dlock.hpp>
#include <stop_token>
#include <string>
#include <thread>

#include "support/handoff_count.hpp"
#include "support/mariadb_server.hpp"
#include "support/net.hpp"

namespace dlock::test {
namespace {

using namespace std::chrono_literals;
using clk = std::chrono::steady_clock;

mariadb_server& server() {
  static mariadb_server s;
  return s;
}

double questions() {
  return std::stod(server()
                       .query("SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS"
                              " WHERE VARIABLE_NAME = 'QUESTIONS'")
                       .at(0));
}

// Before the doorbells every waiter polled its predecessor (1-16 ms backoff): 6.7 statements
// per release with 10 waiters, 181 with 100. Now a release is the holder's removal, the
// woken waiter's listing and its next GET_LOCK: the same for 10 waiters as for 100. One session
// per waiter (101 sessions, 202 connections: the fixture allows 400), and a long lease keeps
// renewals out of the count.
TEST(mysql_scale, statements_per_release_do_not_grow_with_the_number_of_waiters) {
  const auto url = server().url("ttl=60s");
  // The counter read itself is a statement (and a connection's set-up): `own` per read.
  constexpr double own = 3;
  double small = 0;
  constexpr int small_runs = 3;
  for (int run = 0; run < small_runs; ++run) {
    small += requests_per_release(url, "scale10-" + random_suffix(), 10, 10, questions, own);
  }
  small /= small_runs;
  const double large =
      requests_per_release(url, "scale100-" + random_suffix(), 100, 100, questions, own);
  std::printf("mariadb statements per release: %.2f with 10 waiters, %.2f with 100\n", small,
              large);
  EXPECT_LE(large, 1.5 * small) << small << " statements per release with 10 waiters, " << large
                                << " with 100";
}

// A semaphore's waiter waits for any of the N entries ahead of it, which no doorbell can
// announce: its waiters poll. Each on its own, they sent 13.9 statements per release with
// 100 waiters and 217 with 1000 (`dlock bench`, 8 processes); one poll per session now serves
// all of a session's waiters (my_window_poll.hpp). 25 and 100 waiters over 4 sessions, each
// holding 10 ms, a semaphore of 5: a departure wakes the waiters whose N entries ahead it
// was among, up to 5 once 10 wait behind the holders, so fewer waiters than that cost less
// per release for a reason that is not the number of waiters.
TEST(mysql_scale, semaphore_waiters_statements_per_release_do_not_grow) {
  const auto url = server().url("ttl=60s");
  constexpr double own = 3;
  const auto recipe = contended_recipe::permits(5);
  const auto hold = 10ms;
  const double small = requests_per_release(url, "sem25-" + random_suffix(), 25, 4, questions, own,
                                            {}, hold, std::nullopt, recipe);
  const double large = requests_per_release(url, "sem100-" + random_suffix(), 100, 4, questions,
                                            own, {}, hold, std::nullopt, recipe);
  std::printf("mariadb semaphore(5): %.2f statements per release with 25 waiters, %.2f with 100\n",
              small, large);
  EXPECT_LE(large, 1.5 * small) << small << " statements per release with 25 waiters, " << large
                                << " with 100";
}

// A waiter blocked in GET_LOCK (the lease is a minute: nothing else would end it) is cancelled
// and timed out promptly: the stop cuts its doorbell connection, the deadline bounds GET_LOCK.
TEST(mysql_scale, a_waiter_on_a_doorbell_honours_cancel_and_deadline) {
  const auto url = server().url("ttl=60s");
  const auto name = "bell-cancel-" + random_suffix();
  auto hs = session::open(url);
  mutex holder(hs, name);
  holder.lock();
  auto ws = session::open(url);
  {
    mutex waiter(ws, name);
    auto t0 = clk::now();
    EXPECT_FALSE(waiter.try_lock_for(700ms));
    auto took = clk::now() - t0;
    EXPECT_GE(took, 650ms);
    EXPECT_LT(took, 1500ms);
  }
  {
    mutex waiter(ws, name);
    std::stop_source cancel;
    std::error_code ec;
    clk::time_point stopped_at;
    std::jthread stopper([&] {
      std::this_thread::sleep_for(500ms);
      stopped_at = clk::now();
      cancel.request_stop();
    });
    EXPECT_FALSE(waiter.try_lock_until(clk::now() + 30s, cancel.get_token(), ec));
    auto late = clk::now() - stopped_at;
    EXPECT_EQ(ec, make_error_code(errc::cancelled)) << ec.message();
    EXPECT_LT(late, 500ms);
  }
  // The server's side of the cut doorbell connection ends by itself once its GET_LOCK ends
  // (at most 5 s), instead of lingering for the session's life.
  auto ringing = [] {
    return std::stoi(server()
                         .query("SELECT COUNT(*) FROM information_schema.PROCESSLIST"
                                " WHERE INFO LIKE 'SELECT GET_LOCK(CONCAT(''dlock:e:%'")
                         .at(0));
  };
  std::printf("doorbell waits on the server right after the cancel: %d\n", ringing());
  auto gone_by = clk::now() + 8s;
  while (ringing() > 0 && clk::now() < gone_by) std::this_thread::sleep_for(100ms);
  EXPECT_EQ(ringing(), 0);
  // The session's doorbells still work after a cut one: a release wakes the next wait.
  {
    mutex waiter(ws, name);
    std::jthread releaser([&] {
      std::this_thread::sleep_for(300ms);
      holder.unlock();
    });
    auto t0 = clk::now();
    EXPECT_TRUE(waiter.try_lock_for(20s));
    EXPECT_LT(clk::now() - t0, 2s);
    waiter.unlock();
  }
}

// The holder's connection ended by the server (KILL): the doorbell frees with it, so the
// waiter lists again at once and takes over without waiting out the minute's lease.
TEST(mysql_scale, a_killed_holder_connection_wakes_its_waiter_at_once) {
  const auto url = server().url("ttl=60s");
  const auto name = "bell-kill-" + random_suffix();
  auto hs = session::open(url);
  mutex holder(hs, name);
  holder.lock();
  auto conn = server().query("SELECT conn FROM dlock.dlock_sessions WHERE id = ?", {hs.id()});
  ASSERT_EQ(conn.size(), 1u);
  auto ws = session::open(url);
  mutex waiter(ws, name);
  std::jthread killer([&] {
    std::this_thread::sleep_for(500ms);
    server().query("KILL CONNECTION " + conn.at(0));
  });
  auto t0 = clk::now();
  EXPECT_TRUE(waiter.try_lock_for(30s));
  EXPECT_LT(clk::now() - t0, 5s);
  waiter.unlock();
}

}  // namespace
}  // namespace dlock::test
