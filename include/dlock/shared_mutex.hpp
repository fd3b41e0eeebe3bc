#pragma once
/// @file shared_mutex.hpp
/// dlock::shared_mutex: the ZooKeeper read/write lock recipe
/// (zookeeper.apache.org/doc/current/recipes.html#Shared+Locks), meeting the standard
/// SharedTimedLockable requirements so std::shared_lock works with it.
///
/// A reader holds when no writer is queued ahead of it and waits only on the last writer
/// ahead of it; a writer holds when it is first and waits on its predecessor. So a reader
/// is never blocked by a writer that arrived after it, and writers are not starved by a
/// stream of later readers.

#include <dlock/basic_lock.hpp>

namespace dlock {

/// A distributed read/write lock. lock()/try_lock*()/unlock() take it exclusively (as in
/// basic_lock); the *_shared members take it shared. A handle holds in one mode at a time.
/// Asking a handle that holds shared for exclusive access fails with upgrade_refused instead
/// of deadlocking; asking for shared while it holds (either mode) fails with already_held.
class shared_mutex : public detail::basic_lock {
 public:
  shared_mutex(dlock::session s, std::string_view name);

  void lock_shared();
  void lock_shared(std::error_code& ec) noexcept;
  [[nodiscard]] bool try_lock_shared();
  [[nodiscard]] bool try_lock_shared(std::error_code& ec) noexcept;
  template <class Rep, class Period>
  [[nodiscard]] bool try_lock_shared_for(const std::chrono::duration<Rep, Period>& timeout) {
    return try_lock_shared_until(after(timeout));
  }
  template <class Clock, class Duration>
  [[nodiscard]] bool try_lock_shared_until(
      const std::chrono::time_point<Clock, Duration>& deadline) {
    return try_lock_shared_until(to_steady(deadline));
  }
  [[nodiscard]] bool try_lock_shared_until(std::chrono::steady_clock::time_point deadline);
  [[nodiscard]] bool try_lock_shared_until(std::chrono::steady_clock::time_point deadline,
                                           std::stop_token stop, std::error_code& ec) noexcept;
  /// Releases an exclusive hold, as basic_lock::unlock(). A shared hold is kept (a mode
  /// mismatch is a bug in the caller): unlock(ec) then sets not_held.
  void unlock() noexcept;
  void unlock(std::error_code& ec) noexcept;
  /// Releases a shared hold, as basic_lock::unlock(). An exclusive hold is kept:
  /// unlock_shared(ec) then sets not_held.
  void unlock_shared() noexcept;
  void unlock_shared(std::error_code& ec) noexcept;

  /// True while this handle holds in shared mode.
  [[nodiscard]] bool holds_shared() const noexcept;
};

}  // namespace dlock
