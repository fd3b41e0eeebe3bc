// Timeouts and deadlines of any std::chrono type become steady-clock deadlines that saturate:
// a timeout too long for the steady clock (years(1000), seconds::max()) waits forever, where
// the plain conversion overflowed into the past and gave up at once.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <dlock/dlock.hpp>
#include <thread>

namespace dlock::test {
namespace {

using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

TEST(deadline, a_timeout_too_long_for_the_steady_clock_means_forever) {
  EXPECT_EQ(detail::deadline_after(std::chrono::years(1000)), steady::time_point::max());
  EXPECT_EQ(detail::deadline_after(std::chrono::seconds::max()), steady::time_point::max());
  EXPECT_EQ(detail::deadline_after(std::chrono::duration<double>(1e30)), steady::time_point::max());
  const auto past = detail::deadline_after(-5s);
  EXPECT_LE(past, steady::now()) << "zero or less is one try";
  auto d = detail::deadline_after(2s);
  EXPECT_GT(d, steady::now() + 1s);
  EXPECT_LT(d, steady::now() + 3s);
  const auto far = detail::to_steady_deadline(std::chrono::system_clock::time_point::max());
  EXPECT_GT(far, steady::now() + std::chrono::years(100)) << "the wall clock's end, not the past";
  const auto gone = detail::to_steady_deadline(std::chrono::system_clock::time_point::min());
  EXPECT_LE(gone, steady::now());
  // A coarse wall-clock deadline at its end: compared in nanoseconds it overflowed into the
  // past, and a tester's wait "forever" returned at once (UBSan: signed overflow).
  using sys_seconds = std::chrono::time_point<std::chrono::system_clock, std::chrono::seconds>;
  EXPECT_EQ(detail::to_steady_deadline(sys_seconds::max()), steady::time_point::max());
  const auto long_gone = detail::to_steady_deadline(sys_seconds::min());
  EXPECT_LE(long_gone, steady::now());
  // NaN is one try, not a conversion of NaN to an integer.
  const auto not_a_number = detail::deadline_after(std::chrono::duration<double>(std::nan("")));
  EXPECT_LE(not_a_number, steady::now());
}

TEST(deadline, long_timeouts_wait_for_the_release_on_locks_and_semaphores) {
  auto s = dlock::session::open("memory://deadline-test");
  dlock::mutex holder(s, "m");
  dlock::mutex waiter(s, "m");
  holder.lock();
  std::jthread release([&] {
    std::this_thread::sleep_for(100ms);
    holder.unlock();
  });
  EXPECT_TRUE(waiter.try_lock_for(std::chrono::years(1000))) << "gave up at once";
  release.join();
  waiter.unlock();

  dlock::semaphore sem(s, "sem", 1);
  auto held = sem.acquire();
  std::jthread give_back([&] {
    std::this_thread::sleep_for(100ms);
    held.release();
  });
  EXPECT_TRUE(sem.try_acquire_for(std::chrono::seconds::max())) << "gave up at once";
  give_back.join();
  auto sys = sem.try_acquire_until(std::chrono::system_clock::now() + 50ms);
  EXPECT_TRUE(sys) << "a system_clock deadline";
}

}  // namespace
}  // namespace dlock::test
