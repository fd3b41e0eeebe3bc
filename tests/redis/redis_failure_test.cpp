// Faults on redis:// and redlock://: a paused holder, script cache flushes, restarts,
// and Redlock masters dying during a hold.
#include <gtest/gtest.h>
#include <signal.h>

#include <atomic>
#include <dlock/dlock.hpp>
#include <thread>

#include "support/poll.hpp"
#include "support/process.hpp"
#include "support/redis_server.hpp"

namespace dlock::test {
namespace {

using namespace std::chrono_literals;

std::uint64_t token_of(const std::optional<std::string>& line) {
  if (!line || !line->starts_with("granted ")) return 0;
  return std::stoull(line->substr(8));
}

TEST(redis_faults, a_stale_holder_is_told_it_lost_and_its_release_spares_the_new_holder) {
  redis_server srv;
  const std::string prefix = "p:";
  const auto url = "redis://" + srv.address() + "?ttl=1s&prefix=" + prefix;
  child_process stale({DLOCK_TEST_WORKER, "hold", url, "res"});
  auto stale_token = token_of(stale.wait_for_line("granted", 20s));
  ASSERT_GT(stale_token, 0u);
  stale.signal(SIGSTOP);

  auto s = dlock::session::open(url);
  dlock::mutex m(s, "res");
  ASSERT_TRUE(m.try_lock_for(10s)) << "the paused holder's lease did not end";
  EXPECT_GT(m.token().value, stale_token);

  stale.signal(SIGCONT);
  EXPECT_TRUE(stale.wait_for_line("lost", 10s).has_value());
  stale.write_stdin("release\n");
  EXPECT_TRUE(stale.wait_for_line("released", 10s).has_value());
  // The stale release removed nothing of ours: our entry is still the only one.
  auto members = srv.entry_ids(prefix, "res");
  ASSERT_EQ(members.size(), 1u);
  EXPECT_TRUE(members[0].starts_with(s.id()));
  EXPECT_TRUE(m.is_held());
  m.unlock();
}

// Another client deletes a lock's keys (redis-cli DEL, a clean-up script): the next contender
// is granted at once. The holder heard of it only at its release, seconds or hours later (a
// fault trial: `dlock run` ran CMD on); now each renewal checks the session's own entries and
// ends the session when one is gone. Releases racing that check are no such news: many short
// holds under a fast renewal keep the session live.
TEST(redis_faults, a_holder_whose_keys_another_client_deletes_is_told_it_lost) {
  redis_server srv;
  const std::string prefix = "d:";
  const auto url = "redis://" + srv.address() + "?ttl=3s&prefix=" + prefix;
  auto s = dlock::session::open(url);
  dlock::mutex held(s, "res");
  held.lock();
  auto hold = held.current_hold();
  EXPECT_EQ(srv.integer({"DEL", prefix + "h:res", prefix + "q:res", prefix + "m:res"}), 1);
  auto other_s = dlock::session::open(url);
  dlock::mutex other(other_s, "res");
  ASSERT_TRUE(other.try_lock()) << "the deleted keys still held the lock";
  auto until = std::chrono::steady_clock::now() + 10s;
  while (hold.state() != hold_state::lost && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(10ms);
  EXPECT_EQ(hold.state(), hold_state::lost)
      << "the holder whose keys were deleted still believes it holds";
  other.unlock();

  auto busy = dlock::session::open(url + "&keepalive=5ms");
  dlock::mutex m(busy, "short");
  for (int i = 0; i < 300; ++i) {
    m.lock();
    m.unlock();
  }
  EXPECT_EQ(busy.state(), dlock::session_state::live);
}

// An operator clearing a "stuck" lock deletes every key with its name, its fencing counter
// included (a user's report: `redis-cli --scan --pattern 'dlock:*NAME' | xargs redis-cli del`).
// The next holder got token 1 while the old one, told lost only at its next renewal, went on
// with token 6: the resource could not tell them apart. Tokens now go on above a floor no
// lock's name is part of.
TEST(redis_faults, a_lock_whose_counter_is_deleted_goes_on_with_larger_tokens) {
  redis_server srv;
  const std::string prefix = "t:";
  const auto url = "redis://" + srv.address() + "?ttl=15s&prefix=" + prefix;
  auto s = dlock::session::open(url);
  dlock::mutex m(s, "res");
  for (int i = 0; i < 5; ++i) {
    m.lock();
    m.unlock();
  }
  m.lock();
  const auto held = m.token().value;
  EXPECT_EQ(
      srv.integer({"DEL", prefix + "h:res", prefix + "q:res", prefix + "m:res", prefix + "f:res"}),
      2);
  auto other_s = dlock::session::open(url);
  dlock::mutex other(other_s, "res");
  ASSERT_TRUE(other.try_lock()) << "the deleted keys still held the lock";
  EXPECT_GT(other.token().value, held) << "the deleted counter started the tokens again";
  other.unlock();
  // A lock never used before starts above every token of the database as well: its counter
  // cannot be told from one deleted.
  dlock::mutex fresh(other_s, "fresh");
  fresh.lock();
  EXPECT_GT(fresh.token().value, held);
  fresh.unlock();
}

// The entries check follows the lease's renewal as a second call. A check the server refuses or
// does not answer must not count the round as a failed renewal: the lease was renewed on the
// server, and counted as failed it lapses on our clock (the holder told lost for nothing) while
// the server keeps it, so the next contender waits for the server's lease besides. etcd's fault
// run found it during leader elections; here the server refuses scripts to the holder's user.
TEST(redis_faults, a_renewal_whose_entries_check_fails_still_renews_the_lease) {
  redis_server srv(
      {.password = {}, .extra_args = {"--user", "bob", "on", ">bobs-pw", "~*", "&*", "+@all"}});
  const auto url = "redis://bob:bobs-pw@" + srv.address() + "?ttl=1s&prefix=c:";
  auto s = dlock::session::open(url);
  dlock::mutex m(s, "res");
  m.lock();
  auto hold = m.current_hold();
  srv.command({"ACL", "SETUSER", "bob", "-@scripting"});
  std::this_thread::sleep_for(3s);  // three TTLs: nine renewals, each check refused
  EXPECT_EQ(hold.state(), hold_state::held)
      << "a refused check cost the hold: " << to_string(hold.state());
  EXPECT_EQ(s.state(), dlock::session_state::live);
  srv.command({"ACL", "SETUSER", "bob", "+@all"});
  EXPECT_EQ(srv.integer({"EXISTS", "c:h:res"}), 1);
  m.unlock();
}

TEST(redis_faults, script_flush_and_restarts_between_calls_do_not_break_acquire_or_release) {
  redis_server srv;
  const auto url = "redis://" + srv.address() + "?ttl=5s&prefix=r:";
  auto s = dlock::session::open(url);
  dlock::mutex m(s, "x");
  m.lock();
  m.unlock();
  srv.command({"SCRIPT", "FLUSH"});
  m.lock();
  auto t1 = m.token().value;
  srv.command({"SCRIPT", "FLUSH"});
  std::error_code ec;
  m.unlock(ec);
  EXPECT_FALSE(ec) << ec.message();
  EXPECT_EQ(srv.integer({"EXISTS", "r:q:x"}), 0);

  // A restart that keeps the data (SHUTDOWN SAVE): the same session carries on.
  srv.restart(true);
  m.lock();
  EXPECT_GT(m.token().value, t1);
  m.unlock(ec);
  EXPECT_FALSE(ec) << ec.message();
  EXPECT_EQ(s.state(), dlock::session_state::live);

  // A restart that loses the data ends the old session (its lease is gone) ...
  srv.restart(false);
  EXPECT_FALSE(m.try_lock_until(std::chrono::steady_clock::now() + 10s, {}, ec));
  EXPECT_EQ(ec, dlock::errc::session_expired) << ec.message();
  ASSERT_TRUE([&] {
    for (int i = 0; i < 500 && s.state() != dlock::session_state::expired; ++i)
      std::this_thread::sleep_for(20ms);
    return s.state() == dlock::session_state::expired;
  }());
  // ... and a new session works at once.
  auto fresh = dlock::session::open(url);
  dlock::mutex f(fresh, "x");
  f.lock();
  f.unlock(ec);
  EXPECT_FALSE(ec) << ec.message();
}

// A tester's report (2026-12-05): a waiter (`dlock run -w 60s`) gave up with
// backend_unavailable (exit 69) after about 1.2 s of refused connections -- the retries of one
// listing -- while the holder, with the same TTL, kept its lock through the same outage. A
// waiter rides out an outage shorter than its lease as a holder does, and is granted once the
// holder lets go. 3 s down: past the longest a listing's retries take (about 2.3 s).
TEST(redis_faults, a_waiter_rides_out_a_restart_shorter_than_its_lease) {
  redis_server srv;
  const std::string prefix = "rw:";
  const auto url = "redis://" + srv.address() + "?ttl=15s&prefix=" + prefix;
  auto holder_s = dlock::session::open(url);
  dlock::mutex held(holder_s, "job");
  held.lock();
  auto waiter_s = dlock::session::open(url);
  dlock::mutex waiter(waiter_s, "job");
  std::atomic<bool> returned{false};
  bool granted = false;
  std::error_code wait_ec;
  std::string why;  // last_error_message() is the waiting thread's
  std::jthread wait([&] {
    granted = waiter.try_lock_until(std::chrono::steady_clock::now() + 60s, {}, wait_ec);
    if (!granted) why = dlock::last_error_message();
    returned = true;
  });
  ASSERT_TRUE(poll_until([&] { return srv.entry_ids(prefix, "job").size() == 2; }, 10s))
      << "the waiter never queued";
  std::this_thread::sleep_for(200ms);  // blocked on its wake list by now

  srv.stop(true);  // SHUTDOWN SAVE: connections refused until start()
  std::this_thread::sleep_for(3s);
  EXPECT_FALSE(returned) << "the waiter gave up during the outage";
  srv.start();
  std::this_thread::sleep_for(1s);
  EXPECT_FALSE(returned) << "the waiter returned while the lock was still held: "
                         << wait_ec.message();

  std::error_code ec;
  held.unlock(ec);
  EXPECT_FALSE(ec) << ec.message();
  wait.join();
  EXPECT_TRUE(granted) << "not granted after the holder let go: " << wait_ec.message() << " ("
                       << why << ")";
  EXPECT_EQ(waiter_s.state(), dlock::session_state::live);
  if (granted) {
    EXPECT_GT(waiter.token().value, 0u);
    waiter.unlock(ec);
    EXPECT_FALSE(ec) << ec.message();
  }
}

// The same outage, with the acquire begun during it (the fault run's outage cell found this
// one: the enqueue gave up after the policy's attempts, about 1.2 s, with backend_unavailable,
// though the caller gave it 60 s). It waits the outage out and queues once the server is back;
// a one-try acquire still fails at once.
TEST(redis_faults, an_acquire_begun_during_an_outage_waits_it_out) {
  redis_server srv;
  const std::string prefix = "ro:";
  const auto url = "redis://" + srv.address() + "?ttl=15s&prefix=" + prefix;
  auto holder_s = dlock::session::open(url);
  dlock::mutex held(holder_s, "job");
  held.lock();
  auto waiter_s = dlock::session::open(url);
  dlock::mutex waiter(waiter_s, "job");
  srv.stop(true);  // SHUTDOWN SAVE: connections refused until start()
  std::error_code one_try_ec;
  EXPECT_FALSE(waiter.try_lock_until(std::chrono::steady_clock::now(), {}, one_try_ec));
  EXPECT_EQ(one_try_ec, dlock::errc::backend_unavailable) << one_try_ec.message();

  std::atomic<bool> returned{false};
  bool granted = false;
  std::error_code wait_ec;
  std::jthread wait([&] {
    granted = waiter.try_lock_until(std::chrono::steady_clock::now() + 60s, {}, wait_ec);
    returned = true;
  });
  std::this_thread::sleep_for(3s);
  EXPECT_FALSE(returned) << "the acquire gave up during the outage: " << wait_ec.message();
  srv.start();
  EXPECT_TRUE(poll_until([&] { return srv.entry_ids(prefix, "job").size() == 2; }, 10s))
      << "the acquire did not queue once the server was back";
  EXPECT_FALSE(returned) << "returned while the lock was still held: " << wait_ec.message();
  std::error_code ec;
  held.unlock(ec);
  EXPECT_FALSE(ec) << ec.message();
  wait.join();
  EXPECT_TRUE(granted) << wait_ec.message();
  if (granted) waiter.unlock(ec);
}

// An outage longer than the waiters can give it: one whose deadline passes during it times out
// (`dlock run -w` exits 75), one whose lease ends during it is told its session expired;
// neither waits for the server to come back, nor is reported merely unreachable.
TEST(redis_faults, a_waiter_in_an_outage_ends_with_its_deadline_or_its_lease) {
  using clock = std::chrono::steady_clock;
  redis_server srv;
  const std::string prefix = "re:";
  const auto url = "redis://" + srv.address() + "?prefix=" + prefix + "&ttl=";
  auto holder_s = dlock::session::open(url + "15s");
  dlock::mutex held(holder_s, "job");
  held.lock();
  struct waiter {
    dlock::session session;
    dlock::mutex lock;
    clock::time_point deadline;
    std::atomic<bool> returned{false};
    std::error_code ec;
    clock::time_point at{};
    waiter(const std::string& url, clock::time_point d)
        : session(dlock::session::open(url)), lock(session, "job"), deadline(d) {}
  };
  waiter timed(url + "15s", clock::now() + 4s), expiring(url + "2s", clock::now() + 60s);
  auto wait_in = [](waiter& w) {
    return std::jthread([&w] {
      (void)w.lock.try_lock_until(w.deadline, {}, w.ec);
      w.at = clock::now();
      w.returned = true;
    });
  };
  auto t1 = wait_in(timed), t2 = wait_in(expiring);
  ASSERT_TRUE(poll_until([&] { return srv.entry_ids(prefix, "job").size() == 3; }, 3s))
      << "the waiters never queued";
  std::this_thread::sleep_for(200ms);

  srv.stop(true);  // down for 6 s: past the timed waiter's deadline and the other's 2 s lease
  const auto down = clock::now();
  poll_until([&] { return timed.returned && expiring.returned; }, 6s);
  const bool both_returned = timed.returned && expiring.returned;
  srv.start();
  t1.join();
  t2.join();
  EXPECT_TRUE(both_returned) << "a waiter waited on past its deadline or its lease";
  EXPECT_EQ(timed.ec, dlock::errc::timed_out) << timed.ec.message();
  auto ms = [](clock::duration d) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
  };
  // Past its deadline by (ms): not before it, and not long after.
  EXPECT_GE(ms(timed.at - timed.deadline), 0);
  EXPECT_LT(ms(timed.at - timed.deadline), 3000);
  EXPECT_EQ(expiring.ec, dlock::errc::session_expired) << expiring.ec.message();
  EXPECT_LT(ms(expiring.at - down), 4000) << "told long after its 2 s lease ended";
  EXPECT_EQ(expiring.session.state(), dlock::session_state::expired);
  std::error_code ec;
  held.unlock(ec);
  EXPECT_FALSE(ec) << ec.message();
}

struct five_masters {
  std::vector<std::unique_ptr<redis_server>> servers;
  five_masters() {
    for (int i = 0; i < 5; ++i) servers.push_back(std::make_unique<redis_server>());
  }
  std::string url(const std::string& query) const {
    std::string hosts;
    for (auto& s : servers) hosts += (hosts.empty() ? "" : ",") + s->address();
    return "redlock://" + hosts + "?" + query;
  }
};

TEST(redlock_faults, a_hold_survives_one_dead_master_and_no_quorum_fails_cleanly) {
  five_masters m5;
  auto s = dlock::session::open(m5.url("ttl=1s&prefix=rl:"));
  dlock::mutex m(s, "job");
  m.lock();
  auto token = m.token().value;
  m5.servers[1]->kill();
  // Three TTLs: the lease is renewed on the four survivors.
  std::this_thread::sleep_for(3s);
  EXPECT_TRUE(m.is_held());
  EXPECT_EQ(s.state(), dlock::session_state::live);
  std::error_code ec;
  m.unlock(ec);
  EXPECT_FALSE(ec) << ec.message();
  m.lock();
  EXPECT_GT(m.token().value, token);
  m.unlock();

  auto other = dlock::session::open(m5.url("ttl=1s&prefix=rl:"),
                                    {.request_timeout = 300ms, .retry = {.max_attempts = 2}});
  dlock::mutex n(other, "fresh");
  m5.servers[2]->kill();
  m5.servers[3]->kill();
  // Two of five left: no quorum, so no grant, and nothing partial left on the survivors.
  EXPECT_FALSE(n.try_lock_until(std::chrono::steady_clock::now() + 1s, {}, ec));
  EXPECT_TRUE(ec) << "no quorum must be an error or a timeout";
  EXPECT_FALSE(n.is_held());
  for (int i : {0, 4}) {
    EXPECT_TRUE(m5.servers[i]->keys("rl:q:*").empty()) << "partial queue entry on master " << i;
    EXPECT_TRUE(m5.servers[i]->keys("rl:m:*").empty()) << "partial entry data on master " << i;
    EXPECT_TRUE(m5.servers[i]->keys("rl:h:*").empty()) << "partial lone holder on master " << i;
  }
}

}  // namespace
}  // namespace dlock::test
