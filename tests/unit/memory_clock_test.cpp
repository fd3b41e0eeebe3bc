// memory:// leases follow an injected clock, so lease expiry is tested exactly, without
// sleeping through a TTL.
#include "backends/memory/memory_backend.hpp"

#include <dlock/dlock.hpp>
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

namespace {

using namespace std::chrono_literals;

TEST(memory_clock, a_lease_ends_when_the_injected_clock_passes_the_ttl) {
  const std::string store = "clock-test";
  std::atomic<std::chrono::steady_clock::rep> fake{0};
  dlock::detail::set_memory_clock(store, [&] {
    return std::chrono::steady_clock::time_point{std::chrono::steady_clock::duration{fake.load()}};
  });
  // A TTL of an hour: in real time nothing expires during this test.
  auto a = dlock::session::open("memory://" + store + "?ttl=1h");
  auto b = dlock::session::open("memory://" + store + "?ttl=1h");
  dlock::mutex ma(a, "x");
  dlock::mutex mb(b, "x");
  ma.lock();
  fake += std::chrono::duration_cast<std::chrono::steady_clock::duration>(59min).count();
  EXPECT_FALSE(mb.try_lock()) << "expired before the TTL";
  // Renewals run every 20 real minutes, so neither a nor b renews: at 61 min both leases
  // (granted at 0 for 1 h) are over on the injected clock, and a new session takes the lock.
  fake += std::chrono::duration_cast<std::chrono::steady_clock::duration>(2min).count();
  auto c = dlock::session::open("memory://" + store + "?ttl=1h");
  dlock::mutex mc(c, "x");
  EXPECT_TRUE(mc.try_lock()) << "a's lease should have ended on the injected clock";
  EXPECT_EQ(dlock::detail::memory_raw_entries(store, "x"), 1u) << "a's entry was not purged";
  dlock::detail::set_memory_clock(store, [] { return std::chrono::steady_clock::now(); });
}

}  // namespace
