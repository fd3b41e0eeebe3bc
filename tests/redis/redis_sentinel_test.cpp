// Redis with replicas: ?replicas=N (WAIT) and redis-sentinel:// (the master found through
// Sentinel, followed across a failover). A master, two replicas and three sentinels on
// loopback; the master is killed (SIGKILL) while a lock is held.
#include "support/redis_sentinel.hpp"

#include <gtest/gtest.h>

#include <dlock/dlock.hpp>
#include <thread>

#include "support/poll.hpp"

namespace dlock::test {
namespace {

using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

// The session key of `s` is on both replicas (what the master had replicated so far).
bool replicated(sentinel_cluster& c, const std::string& prefix, const dlock::session& s) {
  return poll_until(
      [&] {
        return c.server(1).integer({"EXISTS", prefix + "s:" + s.id()}) == 1 &&
               c.server(2).integer({"EXISTS", prefix + "s:" + s.id()}) == 1;
      },
      10s);
}

const dlock::check_finding* finding(const dlock::diagnosis& d, const std::string& check) {
  for (const auto& f : d.checks) {
    if (f.check == check) return &f;
  }
  return nullptr;
}

std::string verdict(const dlock::diagnosis& d, const std::string& name) {
  for (const auto& g : d.guarantees) {
    if (g.name == name) return dlock::to_string(g.status);
  }
  return "?";
}

TEST(redis_sentinel, with_replicas_1_a_held_lock_survives_the_masters_kill_and_tokens_grow) {
  sentinel_cluster c;
  // The lease outlasts the failover and the other replica's resync with the new master (until
  // then renewals cannot be acknowledged: the hold is suspect meanwhile).
  const auto url = c.url("?ttl=10s&prefix=p:&replicas=1&replica_timeout=500ms");
  auto a = dlock::session::open(url);
  // dlock doctor's view: WAIT makes the failover safe.
  auto d = dlock::diagnose(a);
  EXPECT_EQ(verdict(d, "failover"), "holds");
  ASSERT_NE(finding(d, "sentinel"), nullptr);
  EXPECT_EQ(finding(d, "sentinel")->value,
            "master 'mymaster' at 127.0.0.1:" + std::to_string(c.master().port()) +
                ", 3 sentinel(s) listed");

  dlock::mutex m(a, "res");
  ASSERT_TRUE(m.try_lock_for(5s));
  const auto t1 = m.token().value;
  auto hold = m.current_hold();
  const auto old_port = c.master().port();
  c.master().kill();
  const auto now_master = c.await_failover(old_port, 20s);
  ASSERT_TRUE(poll_until(
      [&] {
        auto info = c.server(now_master).command({"INFO", "replication"})[0];
        return info.find("state=online") != std::string::npos;
      },
      20s))
      << "the other replica did not resync with the new master";
  // The holder renews on the new master, which has its entry: it stays held, never lost.
  ASSERT_TRUE(poll_until([&] { return hold.state() == dlock::hold_state::held; }, 10s));
  ASSERT_TRUE(
      poll_until([&] { return !c.server(now_master).entry_ids("p:", "res").empty(); }, 10s));
  std::this_thread::sleep_for(2500ms);  // more than one renewal on the new master
  EXPECT_EQ(hold.state(), dlock::hold_state::held);
  EXPECT_TRUE(m.is_held());

  auto b = dlock::session::open(url);
  dlock::mutex other(b, "res");
  EXPECT_FALSE(other.try_lock_for(300ms)) << "two holders after the failover";
  m.unlock();
  ASSERT_TRUE(other.try_lock_for(5s));
  EXPECT_GT(other.token().value, t1) << "the token went back across the failover";
  other.unlock();
}

TEST(redis_sentinel, without_replicas_a_failover_can_lose_the_lock_and_its_holder_is_told) {
  sentinel_cluster c;
  const auto url = c.url("?ttl=6s&prefix=p:");
  auto a = dlock::session::open(url);
  EXPECT_EQ(verdict(dlock::diagnose(a), "failover"), "weakened");
  ASSERT_TRUE(replicated(c, "p:", a));
  // The replicas stop receiving the master's writes (their master is now a closed port), as a
  // lagging replica would: the acquire below reaches the master only. Sentinel would restore
  // them only after failover-timeout (3 s); the master dies within milliseconds.
  const auto nowhere = std::to_string(free_port());
  c.server(1).command({"REPLICAOF", "127.0.0.1", nowhere});
  c.server(2).command({"REPLICAOF", "127.0.0.1", nowhere});
  dlock::mutex m(a, "res");
  ASSERT_TRUE(m.try_lock_for(5s));
  const auto t1 = m.token().value;
  auto hold = m.current_hold();
  const auto old_port = c.master().port();
  c.master().kill();
  const auto now_master = c.await_failover(old_port, 20s);
  // The new master never had the entry: the lock is free there ...
  EXPECT_TRUE(c.server(now_master).entry_ids("p:", "res").empty());
  auto b = dlock::session::open(url);
  dlock::mutex other(b, "res");
  ASSERT_TRUE(other.try_lock_for(5s)) << "the lock was not lost: the test's premise failed";
  // ... and its counter neither: the token is handed out again (fencing does not cover it).
  EXPECT_LE(other.token().value, t1);
  // The old holder is told at its first renewal on the new master.
  EXPECT_TRUE(poll_until([&] { return hold.state() == dlock::hold_state::lost; }, 10s))
      << dlock::to_string(hold.state());
  EXPECT_EQ(a.state(), dlock::session_state::expired);
  other.unlock();
}

bool in_sync(const redis_server& replica) {
  return poll_until(
      [&] {
        auto info = replica.command({"INFO", "replication"});
        return !info.empty() && info[0].find("master_link_status:up") != std::string::npos;
      },
      20s);
}

// An open waits for its replicas no longer than its budget: WAIT took its own replica_timeout,
// and a tester's open_timeout of 1.5 s ran to 2.2 s with ?replicas=1 and no replica (here 4 s
// of replica_timeout against 1 s of budget).
TEST(redis_replicas, an_open_waits_for_replicas_within_its_budget) {
  redis_server lone;
  const auto url = "redis://" + lone.address() + "?prefix=p:&replicas=1&replica_timeout=4s";
  const auto started = steady::now();
  std::error_code ec;
  auto s = dlock::session::open(url, {.open_timeout = 1s}, ec);
  EXPECT_EQ(ec, dlock::errc::backend_unavailable) << dlock::last_error_message();
  EXPECT_LT(steady::now() - started, 3s) << dlock::last_error_message();
}

TEST(redis_replicas, what_too_few_replicas_acknowledge_does_not_count) {
  redis_server master;
  const auto master_port = std::to_string(master.port());
  redis_server replica({.password = {}, .extra_args = {"--replicaof", "127.0.0.1", master_port}});
  ASSERT_TRUE(in_sync(replica));
  const auto url =
      "redis://" + master.address() + "?ttl=2s&prefix=p:&replicas=1&replica_timeout=200ms";
  const dlock::session_options opts{.request_timeout = 1s};

  // An acquire: it fails, naming the shortfall, and leaves no entry behind.
  {
    auto s = dlock::session::open(url, opts);
    replica.command({"REPLICAOF", "NO", "ONE"});
    dlock::mutex m(s, "res");
    std::error_code ec;
    EXPECT_FALSE(m.try_lock_until(steady::now() + 500ms, {}, ec));
    EXPECT_EQ(ec, dlock::errc::backend_unavailable) << ec.message();
    EXPECT_NE(dlock::last_error_message().find("only 0 of 1 replicas acknowledged"),
              std::string::npos)
        << dlock::last_error_message();
    EXPECT_TRUE(poll_until([&] { return master.entry_ids("p:", "res").empty(); }, 3s));
    // Opening a session is a write too.
    auto t = dlock::session::open(url, opts, ec);
    EXPECT_EQ(ec, dlock::errc::backend_unavailable) << ec.message();
  }

  // A renewal: it fails like an unanswered one, so the hold goes suspect, then lost at the
  // lease's end.
  replica.command({"REPLICAOF", "127.0.0.1", master_port});
  ASSERT_TRUE(in_sync(replica));
  auto s = dlock::session::open(url, opts);
  dlock::mutex m(s, "res");
  ASSERT_TRUE(m.try_lock_for(2s));
  auto hold = m.current_hold();
  replica.command({"REPLICAOF", "NO", "ONE"});
  EXPECT_TRUE(poll_until([&] { return hold.state() == dlock::hold_state::suspect; }, 3s));
  EXPECT_TRUE(poll_until([&] { return hold.state() == dlock::hold_state::lost; }, 4s))
      << dlock::to_string(hold.state());
}

TEST(redis_replicas, a_bad_replicas_parameter_is_named) {
  redis_server srv;
  for (const char* bad : {"replicas=-1", "replicas=x", "replicas=", "replica_timeout=0"}) {
    std::error_code ec;
    auto s = dlock::session::open("redis://" + srv.address() + "?" + bad, {}, ec);
    EXPECT_EQ(ec, dlock::errc::invalid_argument) << bad;
    EXPECT_NE(dlock::last_error_message().find(std::string(bad).substr(0, 8)), std::string::npos)
        << dlock::last_error_message();
  }
  std::error_code ec;
  auto s = dlock::session::open(
      "redlock://" + srv.address() + ",127.0.0.1:1,127.0.0.1:2?replicas=1", {}, ec);
  EXPECT_EQ(ec, dlock::errc::invalid_argument);
  EXPECT_NE(dlock::last_error_message().find("replicas"), std::string::npos)
      << dlock::last_error_message();
}

}  // namespace
}  // namespace dlock::test
