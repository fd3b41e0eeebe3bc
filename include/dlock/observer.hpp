#pragma once
/// @file observer.hpp
/// Events: what a session's locks, waits and backend requests do, for metrics, tracing and
/// logs. Install one observer per session with session_options::observer; the default is none,
/// and then no event is made at all (no timing, no allocation: the request decorator is not
/// even built).
///
/// Threads: an observer's members are called from any thread, concurrently (the caller's,
/// the session's renewal and removal threads), so they must be thread-safe, fast and must not
/// block: they run inside the operation they describe. They must not call back into the
/// session that reports them. An exception escaping a member is caught and dropped.
///
/// Lifetime: the session keeps its observer (a shared_ptr) as long as it has background work,
/// which can outlive close() and the last session handle: a release the server had not
/// confirmed is retried until it is, or until the lease would have ended anyway, and each
/// retry is reported. Keep whatever the observer refers to (a logger, a metrics registry)
/// alive with it, e.g. by owning it. Every std::string_view in an event is valid only during
/// the call. Events carry no session identity: share one observer between sessions only if
/// that does not matter to it. A session::open that fails reports nothing (its error says
/// what happened).
///
/// Curator has tracer hooks (TracerDriver), ShedLock a Micrometer module; this is dlock's
/// equivalent, without any third-party header.

#include <chrono>
#include <cstdint>
#include <dlock/hold.hpp>
#include <string_view>
#include <system_error>

namespace dlock {

enum class session_state;

/// Which recipe an event is about.
enum class recipe_kind { lock, shared, permit, candidate };

/// Returns "lock", "shared", "permit" or "candidate".
const char* to_string(recipe_kind k) noexcept;

/// An acquire (lock, try_lock*, a permit, a campaign) that ended.
struct acquire_event {
  std::string_view lock;  ///< the lock, semaphore or election name
  recipe_kind recipe{recipe_kind::lock};
  std::chrono::nanoseconds waited{};  ///< from the call to its return
  std::error_code error{};            ///< empty: granted; else timed_out, would_block, ...
  fencing_token token{};              ///< the grant's token (0 when not granted)
  bool reentered{false};              ///< a recursive_mutex's re-entry: nothing was asked
};

/// A release (unlock, a permit's release, a resignation) of a whole hold.
struct release_event {
  std::string_view lock;
  recipe_kind recipe{recipe_kind::lock};
  /// From the grant to the release, including any time after a loss before the release.
  std::chrono::nanoseconds held{};
  fencing_token token{};
  /// empty: confirmed; lock_lost: it was not ours any more; backend_unavailable: not
  /// confirmed (the lease frees it).
  std::error_code error{};
};

/// A waiter woke up and looked at its queue again.
enum class wakeup_kind {
  changed,   ///< the queue had changed (pushed by the server, or found by a poll)
  spurious,  ///< nothing had changed
  timeout,   ///< the deadline came first
};

/// Returns "changed", "spurious" or "timeout".
const char* to_string(wakeup_kind k) noexcept;

/// One request to the backend (server round trips and waits), as the engine made it: a
/// request the backend answered without the server (a removal already known to be lost)
/// is reported too, with its short latency and its error.
struct request_event {
  std::string_view operation;  ///< "enqueue", "list", "remove", "wait", "renew", "set_value", ...
  std::chrono::nanoseconds latency{};
  std::error_code error{};  ///< empty: it succeeded
};

/// Severity of a log message.
enum class log_level { debug, info, warning, error };

/// Returns "debug", "info", "warning" or "error".
const char* to_string(log_level l) noexcept;

/// Receives a session's events. Every member has a no-op default: override what you need.
class observer {
 public:
  virtual ~observer() = default;

  /// An acquire returned (granted or not).
  virtual void on_acquire(const acquire_event& e) { (void)e; }
  /// A hold was released.
  virtual void on_release(const release_event& e) { (void)e; }
  /// A hold changed state (suspect, lost, or held again after suspect); `lock` names it.
  virtual void on_hold_state(std::string_view lock, fencing_token token, hold_state state) {
    (void)lock, (void)token, (void)state;
  }
  /// The session changed state (suspended, live again, expired, closed).
  virtual void on_session_state(session_state state) { (void)state; }
  /// A waiter woke up.
  virtual void on_wakeup(std::string_view lock, wakeup_kind kind) { (void)lock, (void)kind; }
  /// A backend request finished.
  virtual void on_request(const request_event& e) { (void)e; }
  /// The library's own messages, never written to stderr: warnings (a renewal failing, a
  /// release not confirmed, and at open what weakens a guarantee with this backend's
  /// configuration: doctor.hpp) and, as an error, why the session ended when a renewal found
  /// it over (the backend's reason, given before the holds' loss signal).
  virtual void on_log(log_level level, std::string_view message) { (void)level, (void)message; }
};

}  // namespace dlock
