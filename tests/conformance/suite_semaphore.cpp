// The counting semaphore (dlock::semaphore), on every backend that declares permits; where a
// backend does not, that it refuses them clearly.
#include <signal.h>

#include <atomic>
#include <dlock/dlock.hpp>
#include <mutex>
#include <thread>

#include "conformance/suite.hpp"
#include "core/session_core.hpp"

namespace dlock::test {
namespace {

// `url` with its lease set to `ttl`: its own parameter replaced (one given twice is refused).
std::string with_ttl(std::string url, const std::string& ttl) {
  for (std::string name : {"?ttl=", "&ttl=", "?session_timeout=", "&session_timeout="}) {
    auto at = url.find(name);
    if (at == std::string::npos) continue;
    at += name.size();
    auto end = url.find('&', at);
    return url.replace(at, end == std::string::npos ? url.npos : end - at, ttl);
  }
  return url + (url.find('?') == std::string::npos ? "?" : "&") + "ttl=" + ttl;
}

}  // namespace

TEST_P(conformance, a_semaphore_admits_its_limit_and_the_next_one_when_a_permit_returns) {
  auto s = open();
  dlock::semaphore sem(s, lock_name(), 3);
  if (!caps().permits) {
    try {
      (void)sem.try_acquire();
      ADD_FAILURE() << "a backend without permits granted one";
    } catch (const dlock::system_error& e) {
      EXPECT_EQ(e.code(), dlock::errc::unsupported) << e.what();
      // The refusal names the backend, and the reason where the backend gives one.
      const std::string what = e.what(), url = s.url();
      EXPECT_NE(what.find("the " + url.substr(0, url.find("://")) + " backend has no semaphores"),
                std::string::npos)
          << what;
      EXPECT_NE(what.find(caps().no_permits_because), std::string::npos) << what;
    }
    EXPECT_EQ(fx().raw_entries(lock_name()), 0u) << "a refused permit left an entry";
    GTEST_SKIP() << "this mode has no semaphores (see its capabilities); the refusal was checked";
  }
  auto a = sem.try_acquire();
  auto b = sem.try_acquire();
  auto c = dlock::semaphore(open(), lock_name(), 3).try_acquire();
  ASSERT_TRUE(a && b && c);
  EXPECT_LT(a.token(), b.token());
  EXPECT_LT(b.token(), c.token());
  EXPECT_TRUE(a.is_held());
  EXPECT_FALSE(sem.try_acquire()) << "a fourth permit of three";
  b.release();
  EXPECT_FALSE(b);
  auto d = sem.try_acquire();
  ASSERT_TRUE(d) << "a returned permit was not granted again";
  EXPECT_GT(d.token(), c.token());
  auto moved = std::move(d);
  EXPECT_FALSE(d);
  EXPECT_TRUE(moved.is_held());
  EXPECT_EQ(dlock::inspect(s, lock_name()).front().permits, 3u);
}

TEST_P(conformance, never_more_than_the_limit_hold_at_once) {
  if (!caps().permits) GTEST_SKIP() << "this mode has no semaphores (see its capabilities)";
  constexpr int limit = 2, contenders = 5, rounds = 4;
  std::atomic<int> inside{0}, most{0}, granted{0};
  std::vector<std::jthread> ts;
  for (int i = 0; i < contenders; ++i) {
    ts.emplace_back([&] {
      dlock::semaphore sem(open(), lock_name(), limit);
      for (int r = 0; r < rounds; ++r) {
        auto p = sem.try_acquire_for(60s);
        if (!p) continue;
        ++granted;
        int now = ++inside;
        for (int m = most.load(); now > m && !most.compare_exchange_weak(m, now);) {
        }
        std::this_thread::sleep_for(10ms);
        --inside;
      }
    });
  }
  ts.clear();
  EXPECT_EQ(granted.load(), contenders * rounds);
  EXPECT_LE(most.load(), limit) << "more holders than permits";
  EXPECT_GE(most.load(), 1);
}

TEST_P(conformance, a_limit_or_recipe_other_than_the_holders_is_refused_naming_both) {
  if (!caps().permits) GTEST_SKIP() << "this mode has no semaphores (see its capabilities)";
  auto s = open();
  auto held = dlock::semaphore(s, lock_name(), 2).try_acquire();
  ASSERT_TRUE(held);
  auto other = open();
  try {
    (void)dlock::semaphore(other, lock_name(), 3).try_acquire_for(2s);
    ADD_FAILURE() << "a permit of 3 was granted beside permits of 2";
  } catch (const dlock::system_error& e) {
    EXPECT_EQ(e.code(), dlock::errc::invalid_argument);
    std::string what = e.what();
    EXPECT_NE(what.find("2 permits"), std::string::npos) << what;
    EXPECT_NE(what.find("3 permits"), std::string::npos) << what;
  }
  dlock::mutex m(other, lock_name());
  std::error_code ec;
  EXPECT_FALSE(m.try_lock_until(std::chrono::steady_clock::now() + 2s, {}, ec));
  EXPECT_EQ(ec, dlock::errc::invalid_argument) << "a mutex on a semaphore's name";
  EXPECT_TRUE(poll_until([&] { return fx().raw_entries(lock_name()) == 1; }))
      << "a refused acquire left its entry";
  EXPECT_TRUE(held.is_held());
}

TEST_P(conformance, permit_waiters_are_admitted_in_arrival_order) {
  if (!caps().permits) GTEST_SKIP() << "this mode has no semaphores (see its capabilities)";
  if (!caps().fifo) GTEST_SKIP() << "this mode keeps no queue of waiters (see its capabilities)";
  auto s = open();
  dlock::semaphore sem(s, lock_name(), 2);
  auto h1 = sem.try_acquire();
  auto h2 = sem.try_acquire();
  ASSERT_TRUE(h1 && h2);
  std::mutex mu;
  std::vector<int> order;
  std::vector<dlock::permit> got(3);
  std::vector<std::jthread> ts;
  for (int i = 0; i < 3; ++i) {
    ts.emplace_back([&, i] {
      auto p = dlock::semaphore(open(), lock_name(), 2).try_acquire_for(60s);
      std::lock_guard lk(mu);
      order.push_back(i);
      got[static_cast<std::size_t>(i)] = std::move(p);
    });
    ASSERT_TRUE(poll_until([&] { return fx().raw_entries(lock_name()) == 3u + i; }));
  }
  auto granted = [&] {
    std::lock_guard lk(mu);
    return order.size();
  };
  h2.release();  // frees a slot: the first waiter, not a later one
  ASSERT_TRUE(poll_until([&] { return granted() == 1; }, 30s));
  h1.release();
  ASSERT_TRUE(poll_until([&] { return granted() == 2; }, 30s));
  std::this_thread::sleep_for(100ms);
  EXPECT_EQ(granted(), 2u) << "a third permit of two";
  {
    std::lock_guard lk(mu);
    got[0].release();
  }
  ts.clear();
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2}));
}

TEST_P(conformance, a_release_wakes_at_most_the_waiters_it_can_admit) {
  if (!caps().permits) GTEST_SKIP() << "this mode has no semaphores (see its capabilities)";
  constexpr std::uint32_t limit = 2;
  constexpr int waiters = 10;
  auto holders = open();
  dlock::semaphore sem(holders, lock_name(), limit);
  auto a = sem.try_acquire();
  auto b = sem.try_acquire();
  ASSERT_TRUE(a && b);
  // All waiters on one session, so its count of listings after wake-ups is theirs.
  auto w = open();
  std::atomic<int> granted{0};
  std::atomic<bool> measured{false};
  std::vector<std::jthread> ts;
  for (int i = 0; i < waiters; ++i) {
    ts.emplace_back([&] {
      auto p = dlock::semaphore(w, lock_name(), limit).try_acquire_for(60s);
      ++granted;
      while (!measured) std::this_thread::sleep_for(5ms);
    });
  }
  ASSERT_TRUE(poll_until([&] { return fx().raw_entries(lock_name()) == 2u + waiters; }, 30s));
  std::this_thread::sleep_for(300ms);  // every waiter asleep on its wait set
  for (auto* p : {&a, &b}) {
    const auto before = w.core()->wakeup_listings();
    const int was = granted.load();
    p->release();
    ASSERT_TRUE(poll_until([&] { return granted.load() == was + 1; }, 30s));
    std::this_thread::sleep_for(300ms);  // let any other woken waiter list and sleep again
    EXPECT_LE(w.core()->wakeup_listings() - before, limit)
        << "one release woke more waiters than the limit (a herd)";
    EXPECT_EQ(granted.load(), was + 1);
  }
  measured = true;  // each waiter now returns its permit when granted, so all are in turn
  ts.clear();
  EXPECT_EQ(granted.load(), waiters);
}

TEST_P(conformance, a_killed_holders_permit_returns_within_its_ttl) {
  DLOCK_REQUIRE_MULTI_PROCESS();
  if (!caps().permits) GTEST_SKIP() << "this mode has no semaphores (see its capabilities)";
  auto w1 = worker({"permit", fx().url(), lock_name(), "2"});
  auto w2 = worker({"permit", fx().url(), lock_name(), "2"});
  auto t1 = token_of(w1.wait_for_line("granted", 20s));
  auto t2 = token_of(w2.wait_for_line("granted", 20s));
  ASSERT_GT(t1, 0u);
  ASSERT_GT(t2, 0u);
  dlock::semaphore sem(open(), lock_name(), 2);
  EXPECT_FALSE(sem.try_acquire());
  w1.signal(SIGKILL);
  ASSERT_TRUE(w1.wait(5s).has_value());
  dlock::permit p;
  if (caps().frees_dead_process_at_once) {
    p = sem.try_acquire();
    EXPECT_TRUE(p) << "a dead holder's permit was kept";
  }
  if (!p) p = sem.try_acquire_for(fx().ttl() + 1s);
  ASSERT_TRUE(p) << "a killed holder's permit did not return within its TTL";
  EXPECT_GT(p.token().value, std::max(t1, t2));
  w2.write_stdin("held\n");
  EXPECT_EQ(w2.wait_for_line("held", 10s), "held yes") << "the live holder lost its permit";
  EXPECT_FALSE(sem.try_acquire()) << "a third permit of two";
}

// A waiter's own lease must not pace how soon it finds a holder's lapsed: with a 60 s TTL
// it renews every 20 s, and the dead holder's permit is due after the holder's 2 s. On Redis
// the waiter looked again only at its own safety net (granted after 13 s with ttl=45s).
TEST_P(conformance, a_long_lease_waiter_gets_a_killed_holders_permit_at_the_holders_lease_end) {
  DLOCK_REQUIRE_MULTI_PROCESS();
  if (!caps().permits) GTEST_SKIP() << "this mode has no semaphores (see its capabilities)";
  auto holder = worker({"permit", fx().url(), lock_name(), "1"});
  ASSERT_GT(token_of(holder.wait_for_line("granted", 20s)), 0u);
  holder.signal(SIGKILL);
  ASSERT_TRUE(holder.wait(5s).has_value());
  const auto killed = std::chrono::steady_clock::now();
  dlock::semaphore sem(dlock::session::open(with_ttl(fx().url(), "60s")), lock_name(), 1);
  auto p = sem.try_acquire_for(fx().ttl() * 3 + 2s);
  const auto took = std::chrono::steady_clock::now() - killed;
  EXPECT_TRUE(p) << "not granted within 3 of the holder's TTLs";
  EXPECT_LT(took, fx().ttl() * 3 + 1s);
}

// The same for a waiter already asleep while the holders ahead renew: of two, one freezes.
TEST_P(conformance, a_long_lease_waiter_gets_a_frozen_holders_permit_at_the_holders_lease_end) {
  DLOCK_REQUIRE_MULTI_PROCESS();
  if (!caps().permits) GTEST_SKIP() << "this mode has no semaphores (see its capabilities)";
  auto frozen = worker({"permit", fx().url(), lock_name(), "2"});
  auto live = worker({"permit", fx().url(), lock_name(), "2"});
  ASSERT_GT(token_of(frozen.wait_for_line("granted", 20s)), 0u);
  ASSERT_GT(token_of(live.wait_for_line("granted", 20s)), 0u);
  dlock::semaphore sem(dlock::session::open(with_ttl(fx().url(), "60s")), lock_name(), 2);
  std::atomic<bool> granted{false};
  std::jthread waiter([&] { granted = static_cast<bool>(sem.try_acquire_for(30s)); });
  ASSERT_TRUE(poll_until([&] { return fx().raw_entries(lock_name()) == 3u; }, 10s));
  std::this_thread::sleep_for(fx().ttl());  // past a renewal of each holder
  frozen.signal(SIGSTOP);
  const auto stopped = std::chrono::steady_clock::now();
  const bool in_time = poll_until([&] { return granted.load(); }, fx().ttl() * 3 + 1s);
  const auto took = std::chrono::steady_clock::now() - stopped;
  frozen.signal(SIGCONT);
  EXPECT_TRUE(in_time) << "not granted within 3 of the holder's TTLs, but after "
                       << std::chrono::duration_cast<std::chrono::milliseconds>(took).count()
                       << " ms";
  waiter.join();
  EXPECT_TRUE(granted.load());
  live.write_stdin("held\n");
  EXPECT_EQ(live.wait_for_line("held", 10s), "held yes") << "the live holder lost its permit";
}

}  // namespace dlock::test
