#pragma once
/// @file with_lock.hpp
/// Declarative use: run a callable under a named lock -- the C++ counterpart of a Java lock
/// annotation (ShedLock's @SchedulerLock, Redisson's @Lock).
///
/// @code
///   dlock::with_lock(s, {.name = "reports/daily", .wait = 10s}, [](const dlock::hold& h) {
///     write_report(h.token().value);        // the fencing token goes with every write
///   });
///   auto send = dlock::locked(s, {.name = "mailer"}, &send_mail);   // each call locked
///   send(msg);
/// @endcode

#include <chrono>
#include <dlock/mutex.hpp>
#include <dlock/recursive_mutex.hpp>
#include <string>
#include <type_traits>
#include <utility>

namespace dlock {

enum class lock_kind { mutex, recursive };

/// What to lock and how long to wait. An aggregate for designated initializers.
struct lock_spec {
  std::string name;  ///< the lock name (see mutex.hpp for the rules)
  /// mutex or recursive_mutex. Every with_lock call (and every call of a locked() wrapper)
  /// takes the lock through a new handle, and re-entry is per handle (and thread), so a call
  /// nested in another on the same name waits for it (up to `wait`) whatever the kind. To
  /// re-enter, lock one dlock::recursive_mutex yourself.
  lock_kind kind{lock_kind::mutex};
  std::chrono::milliseconds wait{
      std::chrono::milliseconds::max()};  ///< acquire timeout; max = forever, 0 = one try
  std::chrono::milliseconds ttl{
      0};  ///< lease when with_lock opens the session from a URL; 0 = 15 s
};

namespace detail {
template <class F, class... Args>
decltype(auto) invoke_with_hold(F& f, const hold& h, Args&&... args) {
  if constexpr (std::is_invocable_v<F&, const hold&, Args...>) {
    return std::invoke(f, h, std::forward<Args>(args)...);
  } else {
    return std::invoke(f, std::forward<Args>(args)...);
  }
}

template <class Lock, class F, class... Args>
decltype(auto) run_locked(const session& s, const lock_spec& spec, F& f, Args&&... args) {
  Lock lock(s, spec.name);
  bool granted = spec.wait == std::chrono::milliseconds::max() ? (lock.lock(), true)
                 : spec.wait.count() <= 0                      ? lock.try_lock()
                                                               : lock.try_lock_for(spec.wait);
  if (!granted) {
    // Which lock, where, and how long it waited: one try is not a wait.
    throw system_error(
        make_error_code(errc::timed_out),
        "dlock::with_lock: lock '" + spec.name + "' on " + s.url() +
            (spec.wait.count() <= 0
                 ? std::string(" is held by another holder (one try: wait = 0)")
                 : " not granted within " + std::to_string(spec.wait.count()) + " ms"));
  }
  hold h = lock.current_hold();
  // The lock's destructor releases it, also when f throws.
  return invoke_with_hold(f, h, std::forward<Args>(args)...);
}
}  // namespace detail

/// Runs `f` while holding the lock `spec` names on session `s`, then releases it.
/// `f` is called as f(const dlock::hold&, args...) if it accepts that, else f(args...); the
/// hold gives the fencing token and the loss signal (hold::lost_token()).
/// Returns what f returns. Throws dlock::system_error with timed_out when the lock is not
/// granted within spec.wait, the acquire's errors (see basic_lock::lock), or what f throws
/// (the lock is released first). Threads: as many concurrent calls as you like.
template <class F, class... Args>
decltype(auto) with_lock(const session& s, const lock_spec& spec, F&& f, Args&&... args) {
  if (spec.kind == lock_kind::recursive) {
    return detail::run_locked<recursive_mutex>(s, spec, f, std::forward<Args>(args)...);
  }
  return detail::run_locked<mutex>(s, spec, f, std::forward<Args>(args)...);
}

/// As above, opening a session on `url` for the call (lease spec.ttl) and closing it after.
template <class F, class... Args>
decltype(auto) with_lock(std::string_view url, const lock_spec& spec, F&& f, Args&&... args) {
  session_options o;
  if (spec.ttl.count() > 0) o.ttl = spec.ttl;
  session s = session::open(url, o);
  struct closer {
    session& s;
    ~closer() { s.close(); }
  } close_at_exit{s};
  return with_lock(s, spec, std::forward<F>(f), std::forward<Args>(args)...);
}

/// Wraps `f` so that every call runs under the lock: `locked(s, spec, f)(args...)` is
/// `with_lock(s, spec, f, args...)`. The wrapper keeps a copy of the session and of `f`.
template <class F>
auto locked(session s, lock_spec spec, F f) {
  return [s = std::move(s), spec = std::move(spec),
          f = std::move(f)](auto&&... args) mutable -> decltype(auto) {
    return with_lock(s, spec, f, std::forward<decltype(args)>(args)...);
  };
}

}  // namespace dlock
