#pragma once
/// @file basic_lock.hpp
/// The members shared by dlock::mutex, dlock::recursive_mutex and dlock::shared_mutex.
///
/// Algorithm (written once for every backend): contenders join an ordered queue of
/// lease-bound entries under the lock name; the first entry holds; every other contender
/// waits only for the entry just before it to go (no herd effect) -- the ZooKeeper lock
/// recipe (zookeeper.apache.org/doc/current/recipes.html#sc_recipes_Locks) and Curator's
/// InterProcessMutex. Every exit from an acquire that does not end holding removes its entry.

#include <chrono>
#include <dlock/deadline.hpp>
#include <dlock/errors.hpp>
#include <dlock/hold.hpp>
#include <dlock/session.hpp>
#include <memory>
#include <stop_token>
#include <string>
#include <string_view>

namespace dlock {

namespace detail {
class lock_handle;
enum class lock_type { mutex, recursive, shared };

/// Base of the public lock types. Ownership belongs to the handle, not to a thread: a handle
/// may be moved to, and unlocked from, another thread.
///
/// Threads: one handle must not be used by two threads at once (like std::unique_lock);
/// distinct handles, on one session or many, may be used concurrently.
///
/// A moved-from handle holds nothing: its acquires fail with errc::invalid_argument (thrown,
/// or set in ec), unlock() is a no-op, name() is empty; assigning a handle to it restores it.
class basic_lock {
 public:
  basic_lock(basic_lock&&) noexcept;
  basic_lock& operator=(basic_lock&&) noexcept;
  basic_lock(const basic_lock&) = delete;
  basic_lock& operator=(const basic_lock&) = delete;
  /// Releases the lock if this handle holds it; waits at most the session's release_timeout.
  ~basic_lock();

  /// Blocks until the lock is granted. Throws dlock::system_error with already_held (a
  /// non-reentrant handle that holds), session_expired / session_closed, backend_unavailable
  /// (after the session's retries), backend_error, permission_denied. Nothing is held or
  /// left in the backend after an error.
  void lock();
  void lock(std::error_code& ec) noexcept;

  /// One attempt: true if granted at once, false if another holder has it. Throws as lock().
  /// The error_code form sets ec to errc::would_block when another holder has it (false with
  /// an empty ec never happens), and to the failure otherwise.
  [[nodiscard]] bool try_lock();
  [[nodiscard]] bool try_lock(std::error_code& ec) noexcept;

  /// Waits up to `timeout` (any std::chrono duration; converted to the steady clock; one too
  /// long for it to represent waits forever).
  /// Returns false on timeout, leaving nothing in the backend. Throws as lock().
  /// A server that stops answering (paused, black-holed) holds the call longer: up to the
  /// later of `timeout` and session_options::request_timeout, plus release_timeout for the
  /// removal of its entry, and it then throws backend_unavailable instead of returning false
  /// (docs/guarantees.md, "A waiter during an outage"). try_lock() is bounded alike.
  template <class Rep, class Period>
  [[nodiscard]] bool try_lock_for(const std::chrono::duration<Rep, Period>& timeout) {
    return try_lock_until(after(timeout));
  }
  /// Waits until `deadline` (any clock; non-steady clocks are converted once, at the call).
  template <class Clock, class Duration>
  [[nodiscard]] bool try_lock_until(const std::chrono::time_point<Clock, Duration>& deadline) {
    return try_lock_until(to_steady(deadline));
  }
  [[nodiscard]] bool try_lock_until(std::chrono::steady_clock::time_point deadline);

  /// The primitive every acquire uses: waits until `deadline` or until `stop` is requested.
  /// Returns true when granted; false with ec = timed_out, would_block (deadline already
  /// passed at the first look), cancelled, or another error. Never throws.
  [[nodiscard]] bool try_lock_until(std::chrono::steady_clock::time_point deadline,
                                    std::stop_token stop, std::error_code& ec) noexcept;

  /// Releases. Effects: removes this handle's entry, waiting at most the session's
  /// release_timeout (not at all for a hold already lost); a removal not confirmed by then
  /// goes on in the background until the entry is gone or the session ends (the lease is the
  /// backstop). A recursive_mutex releases one level. A handle that does not hold: nothing.
  void unlock() noexcept;
  /// As unlock(), reporting: not_held; session_closed when session::close() released it;
  /// lock_lost when the hold was lost or its entry was no
  /// longer there (lease ended, deleted by an operator); backend_unavailable when the removal
  /// was not confirmed within release_timeout (last_error_message() says when the lease frees
  /// it).
  void unlock(std::error_code& ec) noexcept;

  /// True while this handle holds and the lease is valid (see hold::is_held()).
  [[nodiscard]] bool is_held() const noexcept;
  /// The current hold (empty when not holding): token, deadline, loss signal.
  [[nodiscard]] dlock::hold current_hold() const noexcept;
  /// The current hold's token; throws not_held when not holding.
  [[nodiscard]] fencing_token token() const;
  const std::string& name() const noexcept;
  dlock::session session() const noexcept;

 protected:
  basic_lock(dlock::session s, std::string_view name, lock_type type);
  std::unique_ptr<lock_handle> impl_;

  template <class Rep, class Period>
  static std::chrono::steady_clock::time_point after(const std::chrono::duration<Rep, Period>& d) {
    return deadline_after(d);
  }
  template <class Clock, class Duration>
  static std::chrono::steady_clock::time_point to_steady(
      const std::chrono::time_point<Clock, Duration>& t) {
    return to_steady_deadline(t);
  }
};

}  // namespace detail
}  // namespace dlock
