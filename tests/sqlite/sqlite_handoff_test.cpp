// A SQLite handoff costs the woken waiter one row's look, not a listing of the queue: the
// removal's datagram wakes it, it finds its predecessor's row gone and tells the engine so
// (wait_knowing), and the engine decides from its last listing. Counted, not timed: the
// waiting session's wake-up listings (session_core::wakeup_listings).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <dlock/dlock.hpp>
#include <string>
#include <thread>

#include "core/session_core.hpp"
#include "support/net.hpp"
#include "support/poll.hpp"

namespace dlock::test {
namespace {

TEST(sqlite_handoff, a_woken_waiter_takes_the_lock_without_listing_the_queue) {
  temp_dir dir{"dlock-sqlite-handoff"};
  const std::string url = "sqlite://" + dir.path() + "/locks.db";
  auto hs = session::open(url);
  auto ws = session::open(url);
  constexpr int handoffs = 10;
  for (int i = 0; i < handoffs; ++i) {
    mutex holder(hs, "k");
    holder.lock();
    std::atomic<bool> granted{false};
    std::jthread waiter([&] {
      mutex m(ws, "k");
      m.lock();
      granted = true;
      m.unlock();
    });
    ASSERT_TRUE(poll_until([&] { return inspect(hs, "k").size() == 2; }, std::chrono::seconds{10},
                           std::chrono::milliseconds{1}));
    const auto listed = ws.core()->wakeup_listings();
    holder.unlock();
    ASSERT_TRUE(poll_until([&] { return granted.load(); }, std::chrono::seconds{10},
                           std::chrono::milliseconds{1}));
    EXPECT_EQ(ws.core()->wakeup_listings() - listed, 0u) << "handoff " << i;
  }
}

}  // namespace
}  // namespace dlock::test
