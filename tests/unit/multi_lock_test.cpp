// dlock::multi_lock: one canonical order whatever the order given, all or nothing, and no
// deadlock or livelock between multi-locks given the same locks in opposite orders (a
// tester's std::scoped_lock of two ZooKeeper mutexes made 5 acquisitions in 60 s).
#include <gtest/gtest.h>

#include <atomic>
#include <dlock/dlock.hpp>
#include <mutex>
#include <random>
#include <thread>

namespace dlock {
namespace {

using namespace std::chrono_literals;

class multi_lock_test : public ::testing::Test {
 protected:
  session open() { return session::open(url_); }
  std::string url_ = "memory://multi-" + std::to_string(std::random_device{}()) + "?ttl=5s";
};

TEST_F(multi_lock_test, takes_its_locks_by_name_whatever_order_they_were_given_in) {
  auto s = open();
  mutex b(s, "b"), a(s, "a"), c(s, "c");
  multi_lock all{c, b, a};
  ASSERT_EQ(all.locks().size(), 3u);
  EXPECT_EQ(all.locks()[0].get().name(), "a");
  EXPECT_EQ(all.locks()[2].get().name(), "c");
  // With "a" held elsewhere, a waiting acquire must hold nothing else yet: it waits for "a"
  // first. Given in any other order it would take "c" and "b" meanwhile.
  mutex other_a(open(), "a");
  ASSERT_TRUE(other_a.try_lock());
  std::jthread waiter([&] { all.lock(); });
  const auto until = std::chrono::steady_clock::now() + 10s;
  while (inspect(s, "a").size() < 2 && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(5ms);
  ASSERT_EQ(inspect(s, "a").size(), 2u) << "the waiter never queued for 'a'";
  mutex probe_b(open(), "b");
  EXPECT_TRUE(probe_b.try_lock()) << "took 'b' while waiting for 'a'";
  probe_b.unlock();
  other_a.unlock();
  waiter.join();
  EXPECT_TRUE(all.is_held());
  auto holds = all.holds();
  ASSERT_EQ(holds.size(), 3u);
  for (const auto& h : holds) EXPECT_TRUE(h.is_held());
  all.unlock();
  EXPECT_FALSE(a.is_held() || b.is_held() || c.is_held());
}

TEST_F(multi_lock_test, a_timed_out_or_refused_acquire_holds_nothing) {
  auto s = open();
  mutex a(s, "a"), b(s, "b");
  multi_lock both{b, a};
  mutex other_b(open(), "b");
  ASSERT_TRUE(other_b.try_lock());
  EXPECT_FALSE(both.try_lock());
  EXPECT_FALSE(a.is_held()) << "'a' kept after 'b' was refused";
  EXPECT_FALSE(both.try_lock_for(100ms));
  EXPECT_FALSE(a.is_held()) << "'a' kept after the wait for 'b' timed out";
  {
    std::unique_lock guard(both, std::defer_lock);
    EXPECT_FALSE(guard.try_lock_until(std::chrono::system_clock::now() + 50ms));
  }
  other_b.unlock();
  std::unique_lock guard(both, 2s);
  EXPECT_TRUE(guard.owns_lock());
  EXPECT_TRUE(a.is_held() && b.is_held());
}

TEST_F(multi_lock_test, an_acquire_that_throws_part_way_releases_what_it_took) {
  auto s = open();
  mutex a(s, "a"), b(s, "b");
  ASSERT_TRUE(b.try_lock());  // a non-reentrant handle that holds: its lock() throws
  multi_lock both{a, b};
  try {
    both.lock();
    ADD_FAILURE() << "no exception";
  } catch (const system_error& e) {
    EXPECT_EQ(e.code(), errc::already_held) << e.what();
  }
  EXPECT_FALSE(a.is_held()) << "'a' kept after 'b' threw";
  b.unlock();
}

TEST_F(multi_lock_test, bad_sets_are_refused) {
  auto s = open();
  mutex a(s, "a"), a_again(open(), "a");
  auto refused = [](auto&& make, const char* what) {
    try {
      make();
      ADD_FAILURE() << "accepted: " << what;
    } catch (const system_error& e) {
      EXPECT_EQ(e.code(), errc::invalid_argument) << e.what();
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  };
  refused([] { multi_lock none(std::vector<multi_lock::lock_ref>{}); }, "no locks");
  refused([&] { multi_lock twice{a, a_again}; }, "given twice");
  // One store reached with another lease: still one lock (a tester's multi-lock waited for
  // itself); another store is another lock.
  auto other_lease = url_;
  other_lease.replace(other_lease.find("ttl=5s"), 6, "ttl=6s&keepalive=1s");
  mutex a_other_lease(session::open(other_lease), "a");
  refused([&] { multi_lock twice{a, a_other_lease}; }, "given twice");
  auto elsewhere = url_;
  elsewhere.replace(elsewhere.find("?"), 0, "-elsewhere");
  mutex a_elsewhere(session::open(elsewhere), "a");
  EXPECT_NO_THROW((multi_lock{a, a_elsewhere}));
  mutex gone(std::move(a));
  refused([&] { multi_lock moved{a, gone}; }, "moved from");
}

// One store under a spelling the URL's text does not show to be the same ("/" for no path; in
// other backends "./" in a file's path, an address for a host name): the acquire finds its own
// entry ahead of it and refuses, holding nothing, instead of waiting for itself forever.
TEST_F(multi_lock_test, one_lock_under_two_spellings_is_refused_when_taken) {
  auto s = open();
  auto slash = url_;
  slash.replace(slash.find("?"), 0, "/");
  mutex a(s, "a"), a_slash(session::open(slash), "a"), b(s, "b");
  multi_lock both{a, a_slash, b};  // the URLs' text differs: accepted here
  try {
    both.lock();
    ADD_FAILURE() << "granted one lock twice";
  } catch (const system_error& e) {
    EXPECT_EQ(e.code(), errc::invalid_argument) << e.what();
    EXPECT_NE(std::string(e.what()).find("given twice"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(a.is_held());
  EXPECT_FALSE(b.is_held());
  mutex other(s, "a");
  EXPECT_TRUE(other.try_lock()) << "the refused acquire left the lock held";
  other.unlock();
}

// Two threads, each with the same two locks given in opposite orders, on separate sessions:
// each round both must get through (std::lock's back-off can spin in lockstep instead).
TEST_F(multi_lock_test, opposite_orders_neither_deadlock_nor_livelock) {
  constexpr int rounds = 50;
  std::atomic<int> inside{0}, done{0};
  auto worker = [&](bool reversed) {
    auto s = open();
    mutex x(s, "x"), y(s, "y");
    multi_lock both = reversed ? multi_lock{y, x} : multi_lock{x, y};
    for (int i = 0; i < rounds; ++i) {
      std::lock_guard guard(both);
      EXPECT_EQ(inside.fetch_add(1), 0) << "two threads inside";
      inside.fetch_sub(1);
      done.fetch_add(1);
    }
  };
  { std::jthread one(worker, false), two(worker, true); }
  EXPECT_EQ(done.load(), 2 * rounds);
}

}  // namespace
}  // namespace dlock
