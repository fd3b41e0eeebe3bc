// The lock types meet the standard Lockable, TimedLockable and SharedTimedLockable
// requirements, so the standard guards instantiate with them.
#include <gtest/gtest.h>

#include <concepts>
#include <dlock/dlock.hpp>
#include <mutex>
#include <shared_mutex>

namespace {

template <class L>
concept lockable = requires(L& l) {
  l.lock();
  { l.try_lock() } -> std::same_as<bool>;
  l.unlock();
};
template <class L>
concept timed_lockable = lockable<L> &&
    requires(L& l, std::chrono::milliseconds d, std::chrono::system_clock::time_point t) {
  { l.try_lock_for(d) } -> std::same_as<bool>;
  { l.try_lock_until(t) } -> std::same_as<bool>;
};
template <class L>
concept shared_timed_lockable = timed_lockable<L> &&
    requires(L& l, std::chrono::milliseconds d, std::chrono::steady_clock::time_point t) {
  l.lock_shared();
  { l.try_lock_shared() } -> std::same_as<bool>;
  { l.try_lock_shared_for(d) } -> std::same_as<bool>;
  { l.try_lock_shared_until(t) } -> std::same_as<bool>;
  l.unlock_shared();
};

static_assert(timed_lockable<dlock::mutex>);
static_assert(timed_lockable<dlock::recursive_mutex>);
static_assert(timed_lockable<dlock::multi_lock>);
static_assert(shared_timed_lockable<dlock::shared_mutex>);
static_assert(!std::copy_constructible<dlock::mutex>);
static_assert(std::move_constructible<dlock::mutex>);
static_assert(noexcept(std::declval<dlock::mutex&>().unlock()));

// Instantiating the guards is the test; the function is never called.
[[maybe_unused]] void guards(dlock::mutex& a, dlock::recursive_mutex& b, dlock::shared_mutex& c) {
  std::lock_guard g1(a);
  std::unique_lock g2(b, std::chrono::seconds(1));
  std::scoped_lock g3(a, b);
  std::shared_lock g4(c, std::chrono::seconds(1));
  std::unique_lock g5(c, std::try_to_lock);
}

TEST(lockable, the_standard_guards_work_with_dlock_types) {
  auto s = dlock::session::open("memory://lockable");
  dlock::mutex m(s, "m");
  {
    std::unique_lock lk(m, std::try_to_lock);
    EXPECT_TRUE(lk.owns_lock());
  }
  EXPECT_FALSE(m.is_held());
}

}  // namespace
