// Exclusive locks: exclusion, timeouts, cleanup, order, fencing, misuse.
#include <algorithm>
#include <atomic>
#include <dlock/dlock.hpp>
#include <mutex>
#include <stop_token>
#include <thread>

#include "conformance/suite.hpp"

namespace dlock::test {

TEST_P(conformance, try_lock_fails_while_another_handle_holds) {
  auto a = open();
  auto b = open();
  dlock::mutex ma(a, lock_name());
  dlock::mutex mb(b, lock_name());
  ASSERT_TRUE(ma.try_lock());
  EXPECT_FALSE(mb.try_lock());
  std::error_code ec;
  EXPECT_FALSE(mb.try_lock(ec));
  EXPECT_EQ(ec, dlock::errc::would_block);
  EXPECT_NE(dlock::last_error_message().find("'" + lock_name() + "'"), std::string::npos)
      << dlock::last_error_message();
  ma.unlock();
  EXPECT_TRUE(mb.try_lock());
  mb.unlock();
  EXPECT_EQ(fx().raw_entries(lock_name()), 0u);
}

TEST_P(conformance, two_handles_on_one_session_exclude_each_other) {
  auto s = open();
  dlock::mutex m1(s, lock_name());
  dlock::mutex m2(s, lock_name());
  ASSERT_TRUE(m1.try_lock());
  EXPECT_FALSE(m2.try_lock());
  m1.unlock();
  EXPECT_TRUE(m2.try_lock());
}

TEST_P(conformance, try_lock_for_returns_by_its_deadline_and_leaves_no_entry) {
  auto a = open();
  auto b = open();
  dlock::mutex holder(a, lock_name());
  dlock::mutex waiter(b, lock_name());
  holder.lock();
  auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(waiter.try_lock_for(300ms));
  auto took = std::chrono::steady_clock::now() - start;
  EXPECT_GE(took, 300ms);
  EXPECT_EQ(fx().raw_entries(lock_name()), 1u) << "the timed-out waiter left its entry";
  std::error_code ec;
  EXPECT_FALSE(waiter.try_lock_until(std::chrono::steady_clock::now() + 50ms, {}, ec));
  EXPECT_EQ(ec, dlock::errc::timed_out);
  holder.unlock();
  EXPECT_EQ(fx().raw_entries(lock_name()), 0u);
}

// A timed wait returns at its deadline, however short (a TimedLockable's promise). Redis times
// blocked commands out in its cron, every 100 ms: try_lock_for(10ms) took 100 ms there. The
// median of many tries, so that one slow moment of a shared machine does not decide.
TEST_P(conformance, a_short_timed_wait_returns_at_its_deadline) {
  auto a = open();
  auto b = open();
  dlock::mutex holder(a, lock_name());
  dlock::mutex waiter(b, lock_name());
  holder.lock();
  std::vector<std::chrono::steady_clock::duration> late;
  for (auto wait : {10ms, 30ms, 50ms}) {
    for (int i = 0; i < 5; ++i) {
      auto start = std::chrono::steady_clock::now();
      EXPECT_FALSE(waiter.try_lock_for(wait));
      late.push_back(std::chrono::steady_clock::now() - start - wait);
    }
  }
  std::sort(late.begin(), late.end());
  auto median = std::chrono::duration_cast<std::chrono::milliseconds>(late[late.size() / 2]);
  EXPECT_LT(median, 25ms) << "a timed wait returned " << median.count()
                          << " ms after its deadline (median of " << late.size() << ")";
  holder.unlock();
}

TEST_P(conformance, lock_guard_unique_lock_and_scoped_lock_work) {
  auto s = open();
  dlock::mutex m1(s, lock_name("a"));
  dlock::mutex m2(s, lock_name("b"));
  {
    std::lock_guard g(m1);
    EXPECT_TRUE(m1.is_held());
  }
  EXPECT_FALSE(m1.is_held());
  {
    std::unique_lock lk(m1, 1s);
    EXPECT_TRUE(lk.owns_lock());
  }
  {
    std::scoped_lock both(m1, m2);
    EXPECT_TRUE(m1.is_held() && m2.is_held());
  }
  EXPECT_FALSE(m1.is_held() || m2.is_held());
}

TEST_P(conformance, waiters_are_served_one_at_a_time_in_arrival_order) {
  if (!caps().fifo) GTEST_SKIP() << "this mode keeps no queue of waiters (see its capabilities)";
  constexpr int waiters = 5;
  auto hs = open();
  dlock::mutex holder(hs, lock_name());
  holder.lock();
  std::vector<dlock::session> sessions;
  for (int i = 0; i < waiters; ++i) sessions.push_back(open());
  std::mutex order_mu;
  std::vector<int> order;
  std::atomic<int> inside{0};
  std::atomic<int> max_inside{0};
  std::vector<std::jthread> threads;
  for (int i = 0; i < waiters; ++i) {
    threads.emplace_back([&, i] {
      dlock::mutex m(sessions[static_cast<std::size_t>(i)], lock_name());
      std::lock_guard g(m);
      int now = ++inside;
      int seen = max_inside.load();
      while (now > seen && !max_inside.compare_exchange_weak(seen, now)) {
      }
      {
        std::lock_guard lk(order_mu);
        order.push_back(i);
      }
      std::this_thread::sleep_for(10ms);
      --inside;
    });
    // Arrival order is the order the entries reach the backend.
    ASSERT_TRUE(poll_until(
        [&] { return fx().queued_entries(lock_name()) == static_cast<std::size_t>(i + 2); }));
  }
  holder.unlock();
  threads.clear();
  EXPECT_EQ(max_inside.load(), 1);
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3, 4}));
}

TEST_P(conformance, fencing_tokens_strictly_increase_across_holders) {
  auto a = open();
  auto b = open();
  dlock::mutex ma(a, lock_name());
  dlock::mutex mb(b, lock_name());
  std::uint64_t last = 0;
  for (int i = 0; i < 10; ++i) {
    auto& m = i % 2 ? ma : mb;
    m.lock();
    EXPECT_GT(m.token().value, last);
    last = m.token().value;
    m.unlock();
  }
  // A fresh session (a restarted client) still gets a larger token.
  auto c = open();
  dlock::mutex mc(c, lock_name());
  mc.lock();
  EXPECT_GT(mc.token().value, last);
}

TEST_P(conformance, unlock_by_a_handle_that_does_not_hold_changes_nothing) {
  auto a = open();
  auto b = open();
  dlock::mutex holder(a, lock_name());
  dlock::mutex other(b, lock_name());
  holder.lock();
  std::error_code ec;
  other.unlock(ec);
  EXPECT_EQ(ec, dlock::errc::not_held);
  other.unlock();  // noexcept, no effect
  EXPECT_TRUE(holder.is_held());
  EXPECT_FALSE(other.try_lock());
  EXPECT_EQ(fx().raw_entries(lock_name()), 1u);
}

TEST_P(conformance, relocking_a_non_reentrant_mutex_is_refused) {
  auto s = open();
  dlock::mutex m(s, lock_name());
  m.lock();
  std::error_code ec;
  m.lock(ec);
  EXPECT_EQ(ec, dlock::errc::already_held);
  EXPECT_THROW(m.lock(), dlock::system_error);
  EXPECT_TRUE(m.is_held());
}

TEST_P(conformance, recursive_mutex_counts_holds) {
  auto a = open();
  auto b = open();
  dlock::recursive_mutex r(a, lock_name());
  dlock::mutex other(b, lock_name());
  r.lock();
  auto token = r.token();
  r.lock();
  ASSERT_TRUE(r.try_lock());
  EXPECT_EQ(r.hold_count(), 3u);
  EXPECT_EQ(r.token(), token);
  r.unlock();
  r.unlock();
  EXPECT_FALSE(other.try_lock());
  r.unlock();
  EXPECT_EQ(r.hold_count(), 0u);
  EXPECT_TRUE(other.try_lock());
}

TEST_P(conformance, a_cancelled_wait_leaves_nothing_behind) {
  auto a = open();
  auto b = open();
  dlock::mutex holder(a, lock_name());
  dlock::mutex waiter(b, lock_name());
  holder.lock();
  std::stop_source cancel;
  std::error_code ec;
  bool granted = true;
  std::jthread t([&] {
    granted =
        waiter.try_lock_until(std::chrono::steady_clock::time_point::max(), cancel.get_token(), ec);
  });
  ASSERT_TRUE(poll_until([&] { return fx().queued_entries(lock_name()) == 2; }));
  cancel.request_stop();
  t.join();
  EXPECT_FALSE(granted);
  EXPECT_EQ(ec, dlock::errc::cancelled);
  EXPECT_EQ(fx().raw_entries(lock_name()), 1u);
  holder.unlock();
  auto c = open();
  dlock::mutex third(c, lock_name());
  EXPECT_TRUE(third.try_lock()) << "a ghost waiter blocks the lock";
}

TEST_P(conformance, a_handle_moved_to_another_thread_unlocks_there) {
  auto s = open();
  dlock::mutex m(s, lock_name());
  m.lock();
  std::jthread([mm = std::move(m)]() mutable { mm.unlock(); }).join();
  dlock::mutex again(s, lock_name());
  EXPECT_TRUE(again.try_lock());
}

TEST_P(conformance, bad_lock_names_are_refused_with_a_clear_error) {
  auto s = open();
  for (std::string bad : {std::string(), std::string(256, 'x'), std::string("a\nb"),
                          std::string("\x01"), std::string("\xff\xfe")}) {
    try {
      dlock::mutex m(s, bad);
      ADD_FAILURE() << "accepted a bad name";
    } catch (const dlock::system_error& e) {
      EXPECT_EQ(e.code(), dlock::errc::invalid_argument);
      EXPECT_NE(std::string(e.what()).find("lock name"), std::string::npos) << e.what();
    }
  }
  dlock::mutex ok(s, std::string(255, 'y'));
  EXPECT_TRUE(ok.try_lock());
}

TEST_P(conformance, names_are_stored_verbatim) {
  auto s = open();
  for (std::string name :
       {lock_name("quote'\"; DROP TABLE x; --"), lock_name("ünïcødé/名前"), lock_name("a/b/c"),
        lock_name("%2F.."), lock_name(std::string(255 - lock_name("").size(), 'z'))}) {
    dlock::mutex m(s, name);
    ASSERT_TRUE(m.try_lock()) << name;
    auto q = dlock::inspect(s, name);
    ASSERT_EQ(q.size(), 1u) << name;
    EXPECT_TRUE(q[0].holds);
    EXPECT_EQ(q[0].token, m.token().value);
    m.unlock();
  }
  if (!caps().lists_names) return;  // list_locks_shows_held_locks_by_prefix checks the refusal
  auto names = dlock::list_locks(s, lock_name(""));
  EXPECT_TRUE(names.empty()) << "released locks are still listed";
}

// An observing session (session_options::observe_only, what `dlock status` opens) sees the
// holder as any session does, and cannot acquire.
TEST_P(conformance, an_observing_session_sees_the_holder_and_cannot_acquire) {
  auto s = open();
  dlock::mutex m(s, lock_name());
  ASSERT_TRUE(m.try_lock());
  auto viewer = dlock::session::open(fx().url(), {.observe_only = true});
  auto q = dlock::inspect(viewer, lock_name());
  ASSERT_EQ(q.size(), 1u);
  EXPECT_TRUE(q[0].holds);
  // The advisory modes' servers know that a lock is held, not its token (0: unknown).
  if (q[0].token != 0) {
    EXPECT_EQ(q[0].token, m.token().value);
  }
  dlock::mutex other(viewer, lock_name("other"));
  std::error_code ec;
  EXPECT_FALSE(other.try_lock(ec));
  EXPECT_EQ(ec, dlock::errc::invalid_argument) << ec.message();
  viewer.close();
  EXPECT_TRUE(m.is_held()) << "closing the observer touched the holder";
  m.unlock();
}

// What `dlock run` prints while it waits: its own session's view shows the other session's
// hold, also where the backend cannot list it as an entry (?mode=advisory: the server holds
// it for another connection; the view says so, and status shows it with token 0, unknown).
TEST_P(conformance, a_waiting_session_sees_the_holder_ahead_of_it) {
  auto a = open();
  auto b = open();
  dlock::mutex holder(a, lock_name());
  dlock::mutex waiter(b, lock_name());
  ASSERT_TRUE(holder.try_lock());
  bool granted = false;
  std::jthread t([&] { granted = waiter.try_lock_for(std::chrono::seconds{10}); });
  std::vector<dlock::queue_entry> q;
  ASSERT_TRUE(poll_until([&] {
    q = dlock::inspect(b, lock_name());
    return q.size() == 2;
  })) << q.size();
  EXPECT_TRUE(q[0].holds);
  EXPECT_FALSE(q[0].owner.empty());
  EXPECT_FALSE(q[1].holds);
  holder.unlock();
  t.join();
  EXPECT_TRUE(granted);
  q = dlock::inspect(b, lock_name());
  ASSERT_EQ(q.size(), 1u);
  EXPECT_TRUE(q[0].holds);
  EXPECT_EQ(q[0].token, waiter.token().value);
  waiter.unlock();
}

TEST_P(conformance, list_locks_shows_held_locks_by_prefix) {
  auto s = open();
  dlock::mutex a(s, lock_name("x/1"));
  dlock::mutex b(s, lock_name("x/2"));
  dlock::mutex c(s, lock_name("y/1"));
  a.lock();
  b.lock();
  c.lock();
  if (!caps().lists_names) {
    // Never a list that looks complete and is not (only this session's names).
    try {
      dlock::list_locks(s, lock_name("x/"));
      ADD_FAILURE() << "list_locks answered in a mode that cannot name other sessions' locks";
    } catch (const dlock::system_error& e) {
      EXPECT_EQ(e.code(), dlock::errc::unsupported) << e.what();
    }
    return;
  }
  EXPECT_EQ(dlock::list_locks(s, lock_name("x/")),
            (std::vector<std::string>{lock_name("x/1"), lock_name("x/2")}));
}

}  // namespace dlock::test
