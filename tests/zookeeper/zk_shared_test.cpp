// The read/write lock on ZooKeeper: kinds are visible in the node names, and each waiter
// watches exactly one node -- a writer its predecessor, a reader the last writer ahead.
#include <gtest/gtest.h>

#include <shared_mutex>
#include <thread>

#include "support/poll.hpp"
#include "support/wake_counter.hpp"
#include "zookeeper/zk_env.hpp"

namespace dlock::test {
namespace {

using namespace std::chrono_literals;
using clock = std::chrono::steady_clock;

class zk_shared : public ::testing::Test {
 protected:
  std::string name_ = "rw/" + random_suffix();
  raw_zk raw_{shared_zk().hosts()};
  std::shared_ptr<wake_counter> wakes_ = std::make_shared<wake_counter>();
  dlock::session a_ = dlock::session::open(zk_url(), wake_counter::options(wakes_));
  dlock::session b_ = dlock::session::open(zk_url(), wake_counter::options(wakes_));
  dlock::session c_ = dlock::session::open(zk_url(), wake_counter::options(wakes_));

  std::vector<std::string> kids() { return raw_.children(lock_node(name_)); }
  bool wait_entries(std::size_t n) {
    return poll_until([&] { return kids().size() == n; }, 30s);
  }
  long watches() {
    auto out = zk_four_letter(shared_zk().port(), "wchs");
    auto pos = out.find("Total watches:");
    return pos == std::string::npos ? -1 : std::stol(out.substr(pos + 14));
  }
};

TEST_F(zk_shared, readers_share_with_visible_kinds_and_a_writer_excludes) {
  dlock::shared_mutex r1(a_, name_), r2(b_, name_), w(c_, name_);
  ASSERT_TRUE(r1.try_lock_shared());
  ASSERT_TRUE(r2.try_lock_shared());
  for (auto& k : kids()) EXPECT_NE(k.find("__READ__"), std::string::npos) << k;
  EXPECT_FALSE(w.try_lock());
  EXPECT_EQ(kids().size(), 2u) << "a refused try_lock left its entry";
  bool granted = false;
  std::jthread t([&] { granted = w.try_lock_for(30s); });
  ASSERT_TRUE(wait_entries(3));
  r1.unlock_shared();
  r2.unlock_shared();
  t.join();
  ASSERT_TRUE(granted);
  ASSERT_EQ(kids().size(), 1u);
  EXPECT_NE(kids()[0].find("__WRIT__"), std::string::npos);
  w.unlock();
}

TEST_F(zk_shared, a_reader_behind_a_writer_waits_and_watches_only_that_writer) {
  dlock::shared_mutex w1(a_, name_), w2(b_, name_), r(c_, name_);
  w1.lock();
  bool w2_granted = false, r_granted = false;
  std::jthread tw([&] {
    w2_granted = w2.try_lock_for(30s);
    if (w2_granted) {
      EXPECT_FALSE(r.is_held());
      std::this_thread::sleep_for(50ms);
      w2.unlock();
    }
  });
  ASSERT_TRUE(wait_entries(2));
  std::jthread tr([&] { r_granted = r.try_lock_shared_for(30s); });
  ASSERT_TRUE(wait_entries(3));
  // w2 watches w1, r watches w2 (the last writer ahead of it): two watches, no more.
  poll_until([&] { return watches() == 2; }, 10s);
  EXPECT_EQ(watches(), 2);
  auto before = wakes_->now();
  w1.unlock();
  tw.join();
  tr.join();
  EXPECT_TRUE(w2_granted);
  EXPECT_TRUE(r_granted);
  auto woke = wakes_->now() - before;
  EXPECT_EQ(woke.changed, 2u);  // w2 by w1's release, then r by w2's
  EXPECT_EQ(woke.spurious, 0u);
  r.unlock_shared();
}

TEST_F(zk_shared, a_reader_is_not_blocked_by_a_writer_that_arrived_after_it) {
  dlock::shared_mutex w1(a_, name_), r(b_, name_), w2(c_, name_);
  w1.lock();
  bool r_granted = false, w2_granted = false;
  std::jthread tr([&] { r_granted = r.try_lock_shared_for(30s); });
  ASSERT_TRUE(wait_entries(2));
  std::jthread tw([&] { w2_granted = w2.try_lock_for(30s); });
  ASSERT_TRUE(wait_entries(3));
  w1.unlock();
  tr.join();
  ASSERT_TRUE(r_granted) << "the reader waited for a writer queued behind it";
  EXPECT_FALSE(w2_granted);
  r.unlock_shared();
  tw.join();
  EXPECT_TRUE(w2_granted);
  w2.unlock();
}

TEST_F(zk_shared, upgrading_a_read_hold_is_refused) {
  dlock::shared_mutex m(a_, name_);
  std::shared_lock sl(m);
  std::error_code ec;
  m.lock(ec);
  EXPECT_EQ(ec, dlock::errc::upgrade_refused);
  EXPECT_EQ(kids().size(), 1u);
}

}  // namespace
}  // namespace dlock::test
