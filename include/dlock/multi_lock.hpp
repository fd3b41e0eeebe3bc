#pragma once
/// @file multi_lock.hpp
/// dlock::multi_lock: several exclusive locks taken and released as one, as Curator's
/// InterProcessMultiLock. Use it instead of std::scoped_lock or std::lock for dlock locks:
/// those try one lock, back off and try again, which between contending processes can go on
/// in lockstep for minutes when each try is a round trip (see mutex.hpp).
///
/// @code
///   dlock::mutex from(s, "account/17"), to(s, "account/42");
///   dlock::multi_lock both{from, to};           // taken as account/17, then account/42
///   std::unique_lock guard(both, std::chrono::seconds(5));
///   if (guard) transfer(from.token(), to.token());
/// @endcode

#include <chrono>
#include <dlock/basic_lock.hpp>
#include <dlock/deadline.hpp>
#include <dlock/hold.hpp>
#include <functional>
#include <initializer_list>
#include <system_error>
#include <vector>

namespace dlock {

/// Several dlock::mutex and dlock::recursive_mutex handles, on one session or many, locked
/// as one. Meets TimedLockable, so std::lock_guard and std::unique_lock work with it.
///
/// Order: every acquire takes the locks in one canonical order, by name (bytewise) and then by
/// where the session's locks live (its URL without user, password, `ttl=` or `keepalive=`),
/// whatever order they were given in. Multi-locks over overlapping names,
/// in any processes, therefore never wait for each other in a cycle (no deadlock), and each
/// waits in its locks' fair queues instead of retrying (no livelock).
///
/// All or nothing: an acquire that fails, times out or throws part-way releases the locks it
/// took (in reverse order) before it returns. unlock() releases every lock, in reverse order.
/// Each lock keeps its own fencing token and loss signal: holds() gives them.
///
/// The handles are referenced, not owned: they must outlive the multi_lock, and must not be
/// locked or unlocked through themselves while it holds them. Threads: as one lock handle
/// (basic_lock.hpp): one thread at a time.
class multi_lock {
 public:
  using lock_ref = std::reference_wrapper<detail::basic_lock>;

  /// Throws dlock::system_error with invalid_argument when `locks` is empty, holds a
  /// moved-from handle, or names one lock twice: one name on sessions whose URLs differ at
  /// most in user, password, `ttl=`, `keepalive=` or the hosts' order (its second acquire
  /// would wait for the first forever). Other spellings of one place (an IP address for a host
  /// name, a path with "./") are found by the acquire instead (lock()).
  explicit multi_lock(std::vector<lock_ref> locks);
  multi_lock(std::initializer_list<lock_ref> locks);

  /// Blocks until every lock is granted. Throws as basic_lock::lock(), having released the
  /// locks it took; a recursive_mutex already held is re-entered, as by itself. Also throws
  /// invalid_argument when two handles of one name, refused at once, prove to be one lock
  /// (the second's queue holds the first's entry: one store under two spellings of its URL);
  /// this costs one more attempt and a listing, only for a name given twice.
  void lock();

  /// One attempt at each lock: true if all were granted at once; false, holding none of them,
  /// when another holder has one. Throws as lock().
  [[nodiscard]] bool try_lock();

  /// Waits up to `timeout` in all, for every lock (any std::chrono duration).
  template <class Rep, class Period>
  [[nodiscard]] bool try_lock_for(const std::chrono::duration<Rep, Period>& timeout) {
    return try_lock_until(detail::deadline_after(timeout));
  }
  /// Waits until `deadline` (any clock; non-steady clocks are converted once, at the call).
  /// Returns false, holding none of the locks, when it passes. Throws as lock().
  template <class Clock, class Duration>
  [[nodiscard]] bool try_lock_until(const std::chrono::time_point<Clock, Duration>& deadline) {
    return try_lock_until(detail::to_steady_deadline(deadline));
  }
  [[nodiscard]] bool try_lock_until(std::chrono::steady_clock::time_point deadline);

  /// Releases every lock, in reverse order (each as basic_lock::unlock()).
  void unlock() noexcept;
  /// As unlock(), reporting the first failure among the locks (basic_lock::unlock(ec)).
  void unlock(std::error_code& ec) noexcept;

  /// True while every lock is held and its lease valid (basic_lock::is_held()).
  [[nodiscard]] bool is_held() const noexcept;
  /// The holds, in the canonical order (empty holds for locks not held).
  [[nodiscard]] std::vector<dlock::hold> holds() const;
  /// The handles, in the canonical order: the order in which they are taken.
  [[nodiscard]] const std::vector<lock_ref>& locks() const noexcept { return locks_; }

 private:
  // Takes the locks in order; `take` is one lock's acquire. Releases what it took if one is
  // not granted or throws.
  bool acquire(const std::function<bool(detail::basic_lock&)>& take);

  std::vector<lock_ref> locks_;
};

}  // namespace dlock
