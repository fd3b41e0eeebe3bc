#pragma once
/// @file semaphore.hpp
/// dlock::semaphore: at most N holders at once across processes and hosts (a counting
/// semaphore; Curator's InterProcessSemaphoreV2, Redisson's RPermitExpirableSemaphore), shaped
/// after std::counting_semaphore where it can be.
///
/// Algorithm (written once for every backend, over the same ordered queue as the locks): a
/// permit is an entry of the semaphore's queue; an entry with fewer than N entries ahead of
/// it holds (FIFO); a waiter waits on the N entries just ahead of it, so a release wakes at
/// most N waiters however many wait. A crashed holder's permit returns when its lease ends
/// (at once where the backend frees a dead process at once). Each permit has its own fencing
/// token (strictly increasing per semaphore name) and loss signal, like a lock's hold.
///
/// The limit is kept with the entries: while any permit of a name is held or awaited, an
/// acquire that names another limit (or uses the name as a lock) fails with
/// errc::invalid_argument naming both. Needs session::capabilities().permits; else acquires
/// fail with errc::unsupported.

#include <chrono>
#include <cstdint>
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
}

/// One permit of a semaphore, held until released or destroyed (RAII; movable, not copyable).
/// An empty permit (default-constructed, moved-from, released, or a try that found none
/// free) holds nothing. Threads: one permit must not be used by two threads at once.
class permit {
 public:
  permit() noexcept;
  permit(permit&&) noexcept;
  /// Releases what this permit held first (as release()), then takes `other`'s.
  permit& operator=(permit&&) noexcept;
  permit(const permit&) = delete;
  permit& operator=(const permit&) = delete;
  /// Releases, waiting at most the session's release_timeout (as release()).
  ~permit();

  /// True until released (a lost permit is still non-empty: see is_held()).
  explicit operator bool() const noexcept;
  /// True while held and its lease is valid (see hold::is_held()).
  [[nodiscard]] bool is_held() const noexcept;
  /// Its fencing token; throws errc::not_held when empty.
  [[nodiscard]] fencing_token token() const;
  /// End of its lease as this client knows it (see hold::valid_until()); epoch when empty.
  [[nodiscard]] std::chrono::steady_clock::time_point valid_until() const noexcept;
  /// Stop requested when the permit is lost (see hold::lost_token()).
  [[nodiscard]] std::stop_token lost_token() const noexcept;
  /// The underlying hold: state, callbacks, suspect signal. Empty when this permit is.
  [[nodiscard]] dlock::hold hold() const noexcept;
  /// The semaphore's name; empty when this permit is.
  std::string name() const;

  /// Returns the permit, as basic_lock::unlock(): waits at most release_timeout for the
  /// server; an unconfirmed removal goes on in the background. Empty: nothing.
  void release() noexcept;
  /// As release(), reporting not_held (empty), lock_lost, backend_unavailable.
  void release(std::error_code& ec) noexcept;

 private:
  friend class semaphore;
  explicit permit(std::unique_ptr<detail::lock_handle> h) noexcept;
  std::unique_ptr<detail::lock_handle> impl_;
};

/// A distributed counting semaphore named `name` with `max_permits` permits on `session`'s
/// backend. Threads: a semaphore object may be used by many threads at once (each acquire
/// makes its own permit). A moved-from semaphore refuses acquires (errc::invalid_argument,
/// thrown or set in ec). Example:
/// @code
///   auto s = dlock::session::open("sqlite:///var/lib/app/locks.db");
///   dlock::semaphore exports(s, "reports/export", 5);
///   if (auto p = exports.try_acquire_for(std::chrono::seconds(30))) run_export(p.token());
/// @endcode
class semaphore {
 public:
  /// Throws dlock::system_error(invalid_argument) for an empty session, a bad name (as a
  /// lock's) or `max_permits` outside [1, 1000].
  semaphore(dlock::session s, std::string_view name, std::uint32_t max_permits);

  /// Blocks until a permit is granted. Throws dlock::system_error: invalid_argument (the name
  /// is in use with another limit or as a lock), unsupported (the backend has no semaphores),
  /// session_expired / session_closed, backend_unavailable, backend_error. Nothing is left in
  /// the backend after an error.
  [[nodiscard]] permit acquire();
  /// One attempt: a permit if one is free now, else an empty permit. Throws as acquire().
  [[nodiscard]] permit try_acquire();
  /// Waits up to `timeout` (any std::chrono duration; one too long for the steady clock waits
  /// forever); an empty permit on timeout. Throws as acquire().
  template <class Rep, class Period>
  [[nodiscard]] permit try_acquire_for(const std::chrono::duration<Rep, Period>& timeout) {
    return try_acquire_until(detail::deadline_after(timeout));
  }
  /// Waits until `deadline` (any clock; a non-steady one is converted once, at the call); an
  /// empty permit on timeout. Throws as acquire().
  template <class Clock, class Duration>
  [[nodiscard]] permit try_acquire_until(const std::chrono::time_point<Clock, Duration>& deadline) {
    return try_acquire_until(detail::to_steady_deadline(deadline));
  }
  [[nodiscard]] permit try_acquire_until(std::chrono::steady_clock::time_point deadline);
  /// The primitive: waits until `deadline` or `stop`; an empty permit with ec set
  /// (would_block, timed_out, cancelled, or the failure) when none was granted. Never throws.
  [[nodiscard]] permit try_acquire_until(std::chrono::steady_clock::time_point deadline,
                                         std::stop_token stop, std::error_code& ec) noexcept;

  /// The limit N given at construction (std::counting_semaphore::max).
  std::uint32_t max() const noexcept { return max_; }
  const std::string& name() const noexcept { return name_; }
  dlock::session session() const noexcept { return session_; }

 private:
  permit take(std::chrono::steady_clock::time_point deadline, const char* op);
  dlock::session session_;
  std::string name_;
  std::uint32_t max_;
};

}  // namespace dlock
