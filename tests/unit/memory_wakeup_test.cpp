// memory:// wakes only the threads awaiting the entry that left: with N waiters queued on one
// lock, each release wakes its successor, not all N (a herd effect: 1000 waiters released
// 76-165 times a second, every release waking all of them). Counted by the store, not timed.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <dlock/dlock.hpp>
#include <string>
#include <thread>
#include <vector>

#include "backends/memory/memory_backend.hpp"

namespace {

using namespace std::chrono_literals;

// Wake-ups per release while `n` waiters, queued behind a holder, take the lock in turn.
double wakeups_per_release(int n) {
  const std::string store = "wakeups-" + std::to_string(n);
  auto s = dlock::session::open("memory://" + store);
  dlock::mutex holder(s, "k");
  holder.lock();
  std::vector<std::jthread> waiters;
  for (int i = 0; i < n; ++i) {
    waiters.emplace_back([&s] {
      dlock::mutex m(s, "k");
      m.lock();
      m.unlock();
    });
  }
  // Every waiter has queued.
  for (int i = 0; i < 1000 && dlock::detail::memory_raw_entries(store, "k") < std::size_t(n) + 1;
       ++i) {
    std::this_thread::sleep_for(5ms);
  }
  EXPECT_EQ(dlock::detail::memory_raw_entries(store, "k"), std::size_t(n) + 1);
  const auto before = dlock::detail::memory_waiters_woken(store);
  holder.unlock();
  for (auto& t : waiters) t.join();
  return static_cast<double>(dlock::detail::memory_waiters_woken(store) - before) / (n + 1);
}

TEST(memory_wakeups, a_release_wakes_its_successor_not_every_waiter) {
  const double ten = wakeups_per_release(10);
  const double hundred = wakeups_per_release(100);
  EXPECT_GT(ten, 0.5) << "no waiter was woken by a release: the count is not counting";
  EXPECT_LE(ten, 1.5);
  EXPECT_LE(hundred, 1.5) << "a release wakes more waiters as the queue grows (10: " << ten << ")";
}

}  // namespace
