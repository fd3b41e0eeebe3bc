#pragma once
/// @file recursive_mutex.hpp
/// dlock::recursive_mutex: the reentrant lock of Curator's InterProcessMutex. The same
/// handle may lock N times; the lock is free only after N unlocks. Re-entry costs no round
/// trip and is the holding thread's, as with std::recursive_mutex: another thread's lock() on
/// the same handle while it is held fails with already_held (give each thread a handle of its
/// own; one handle shared by threads would let them all in). A handle moved to another thread
/// re-enters there. Re-entering a hold that was lost fails (lock_lost, or session_expired once
/// the session ended) and leaves the count unchanged.

#include <cstddef>
#include <dlock/basic_lock.hpp>

namespace dlock {

/// A reentrant distributed mutex. Meets TimedLockable. A re-entry keeps the first
/// acquisition's fencing token. Thread and error rules as dlock::mutex.
class recursive_mutex : public detail::basic_lock {
 public:
  recursive_mutex(dlock::session s, std::string_view name);
  /// Number of lock() calls not yet matched by unlock() (0 when not holding).
  [[nodiscard]] std::size_t hold_count() const noexcept;
};

}  // namespace dlock
