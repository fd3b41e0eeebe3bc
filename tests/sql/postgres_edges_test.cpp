// PostgreSQL at the edges (issue 12): a connection pooler (a real PgBouncer) in front of the
// server, and the server terminating a holder's connection while another session waits.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <dlock/dlock.hpp>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <thread>

#include "support/net.hpp"
#include "support/pgbouncer.hpp"
#include "support/postgres_server.hpp"

namespace dlock::test {
namespace {

using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

postgres_server& server() {
  static postgres_server s;
  return s;
}

// The "dlock" user creates the schema once, directly.
void ensure_schema() {
  static std::once_flag once;
  std::call_once(once, [] { session::open(server().url()).close(); });
}

bool eventually(const std::function<bool()>& pred, std::chrono::milliseconds timeout,
                std::chrono::milliseconds step = 10ms) {
  auto deadline = steady::now() + timeout;
  while (steady::now() < deadline) {
    if (pred()) return true;
    std::this_thread::sleep_for(step);
  }
  return pred();
}

std::string lock_name(const std::string& stem) { return stem + "-" + random_suffix(); }

// ---------------------------------------------------------------------------------------
// Item 13: the holder is told lost before the next client is granted.

// A holds, B waits, the server terminates A's connection: A's loss signal must come before
// B's grant, every time. Each round's waiter is the next round's holder, so one session opens
// per round.
void loss_precedes_grant(const std::string& query, bool advisory, int rounds) {
  ensure_schema();
  auto& pg = server();
  auto lock = lock_name(advisory ? "term-adv" : "term");
  auto url = pg.url(query);
  auto holder = std::make_unique<session>(session::open(url));
  auto held = std::make_unique<mutex>(*holder, lock);
  held->lock();
  int late = 0, unsignalled = 0;
  std::string first_late;
  for (int round = 0; round < rounds; ++round) {
    auto hold = held->current_hold();
    std::atomic<std::int64_t> lost_at{0};
    std::stop_callback on_lost(hold.lost_token(),
                               [&] { lost_at = steady::now().time_since_epoch().count(); });
    auto waiter_session = std::make_unique<session>(session::open(url));
    auto waiting = std::make_unique<mutex>(*waiter_session, lock);
    std::atomic<std::int64_t> granted_at{0};
    bool granted = false;
    std::thread t([&] {
      granted = waiting->try_lock_for(20s);
      granted_at = steady::now().time_since_epoch().count();
    });
    // The waiter is queued (lease: its entry row; advisory: its "waiting" mark) before the
    // holder's connection is terminated.
    auto queued = [&] {
      if (advisory) {
        return pg.query(
                     "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted"
                     " AND ((classid::bigint << 32) | objid::bigint) ="
                     " hashtextextended('dlock:' || $1, 1)",
                     {lock})
                   .at(0) != "0";
      }
      return pg.query("SELECT count(*) FROM dlock.entries WHERE name = $1", {lock}).at(0) == "2";
    };
    ASSERT_TRUE(eventually(queued, 10s, 1ms)) << "round " << round;
    auto killed = advisory ? pg.query(
                                 "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                                 " WHERE application_name = 'dlock:' || $1",
                                 {holder->id()})
                           : pg.query(
                                 "SELECT pg_terminate_backend(pid) FROM dlock.sessions"
                                 " WHERE id = $1",
                                 {holder->id()});
    ASSERT_EQ(killed, std::vector<std::string>{"t"}) << "round " << round;
    t.join();
    ASSERT_TRUE(granted) << "round " << round;
    if (!eventually([&] { return lost_at.load() != 0; }, 5s, 1ms)) {
      ++unsignalled;
    } else if (lost_at.load() >= granted_at.load()) {
      if (late++ == 0) {
        first_late = "round " + std::to_string(round) + ": granted " +
                     std::to_string((lost_at.load() - granted_at.load()) / 1000) +
                     " us before the holder's loss signal";
      }
    }
    held.reset();
    holder.reset();
    holder = std::move(waiter_session);
    held = std::move(waiting);
  }
  EXPECT_EQ(unsignalled, 0) << "holders never told lost";
  EXPECT_EQ(late, 0) << late << " of " << rounds << " grants came before the holder's loss ("
                     << first_late << ")";
  held->unlock();
}

TEST(postgres_termination, holder_is_told_lost_before_the_waiter_is_granted_lease_mode) {
  loss_precedes_grant("ttl=30s", false, 200);
}

TEST(postgres_termination, holder_is_told_lost_before_the_waiter_is_granted_advisory_mode) {
  loss_precedes_grant("ttl=30s&mode=advisory", true, 200);
}

}  // namespace
}  // namespace dlock::test
