// A SQLite handoff costs the woken waiter one row's look, not a listing of the queue: the
// removal's datagram wakes it, it finds its predecessor's row gone and tells the engine so
// (wait_knowing), and the engine decides from its last listing. Counted, not timed: the
// waiting session's wake-up listings (session_core::wakeup_listings).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <dlock/dlock.hpp>
#include <string>
#include <system_error>
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

// A waiter whose session another client ended (force_unlock of a lock it held takes its
// entries in every queue) is woken when the entry ahead leaves: it must not take the lock from
// its last view, which still shows its own entry. The fault run's "expire waiter" cell found
// it (tokens granted out of order); here it is deterministic: the waiter's own renewal is
// seconds away.
TEST(sqlite_handoff, a_waiter_whose_session_was_ended_is_not_granted_from_its_last_view) {
  temp_dir dir{"dlock-sqlite-handoff"};
  const std::string url = "sqlite://" + dir.path() + "/locks.db";
  auto hs = session::open(url);
  auto ws = session::open(url);
  auto admin = session::open(url);
  mutex other(ws, "a");
  other.lock();
  mutex holder(hs, "k");
  holder.lock();
  std::atomic<bool> granted{false}, failed{false};
  std::jthread waiter([&] {
    mutex m(ws, "k");
    try {
      m.lock();
      granted = true;
      m.unlock();
    } catch (const std::system_error&) {
      failed = true;
    }
  });
  ASSERT_TRUE(poll_until([&] { return inspect(hs, "k").size() == 2; }, std::chrono::seconds{10},
                         std::chrono::milliseconds{1}));
  ASSERT_EQ(force_unlock(admin, "a").size(), 1u);
  holder.unlock();
  ASSERT_TRUE(poll_until([&] { return granted || failed; }, std::chrono::seconds{30},
                         std::chrono::milliseconds{1}));
  EXPECT_FALSE(granted) << "granted from a view that still showed its ended session's entry";
}

}  // namespace
}  // namespace dlock::test
