#pragma once
/// @file session.hpp
/// A session: one client's liveness with one backend. It owns the backend connection and one
/// lease (TTL), renews the lease in the background, and revokes everything it holds when it
/// is closed. Modelled on etcd's concurrency.Session and Curator's connection states.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <dlock/errors.hpp>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>

namespace dlock {

class observer;  // observer.hpp

namespace detail {
class session_core;
class basic_lock;
}  // namespace detail

/// How transient backend failures (connection reset, server busy) are retried: capped
/// exponential backoff with full jitter, like Curator's ExponentialBackoffRetry.
/// Attempt k (k = 0, 1, ...) sleeps a random time in [0, min(max_delay, base_delay * 2^k)].
struct retry_policy {
  std::chrono::milliseconds base_delay{10};   ///< first backoff cap
  std::chrono::milliseconds max_delay{1000};  ///< backoff never exceeds this
  /// Retries per operation; 0 = fail at once. An acquire with a deadline in the future (its
  /// enqueue, a candidate's value, a waiter's listings) is not bounded by it: retried until
  /// the acquire's deadline or the session's end, so an acquire rides out an outage shorter
  /// than its lease, as the renewals do. A one-try acquire (try_lock) is bounded by it.
  int max_attempts{8};
};

/// session_options::ttl: a std::chrono::milliseconds (it reads, compares and computes as one)
/// that knows whether it was given. Left at its default (15 s), the URL's `ttl=` sets it; given,
/// even as 15 s, it must agree with the URL's. Takes any duration that converts to
/// milliseconds without loss, as a plain milliseconds did: `{.ttl = 10s}`, `o.ttl = 500ms`.
class ttl_option : public std::chrono::milliseconds {
 public:
  /// The default, 15 s, not given.
  constexpr ttl_option() noexcept : std::chrono::milliseconds(std::chrono::seconds{15}) {}
  /// Given.
  template <class Rep, class Period>
  requires std::is_convertible_v<std::chrono::duration<Rep, Period>, std::chrono::milliseconds>
  constexpr ttl_option(const std::chrono::duration<Rep, Period>& d) noexcept  // NOLINT: implicit
      : std::chrono::milliseconds(d), given_(true) {}
  /// True when a value was given (initialized or assigned), even the default's.
  constexpr bool given() const noexcept { return given_; }

 private:
  bool given_{false};
};

/// Options of a session; an aggregate for designated initializers:
/// `dlock::session::open(url, {.ttl = 10s})`. Validated by session::open.
struct session_options {
  /// Lease length. A holder that stops renewing (crash, pause, partition) loses its locks
  /// after at most this long. At least 10 ms, but a renewal must fit in a third of it: under
  /// about 50 ms a busy host or a slow disk (SQLite commits each renewal) loses the lease now
  /// and then, and the holds are told lost. ZooKeeper: the requested session timeout (the
  /// server may clamp it to [2, 20] ticks). URL parameter `ttl=` sets it too; both set to
  /// different values is invalid_argument (set here means given, even as the default 15 s).
  ttl_option ttl{};
  /// Time between renewals; zero means ttl / 3.
  std::chrono::milliseconds keepalive_interval{0};
  /// Bound on connecting and on each backend request before it counts as a failure. Keep it
  /// well below the TTL: a renewal that hangs for request_timeout makes holds *suspect* only
  /// when it gives up, and it starts a keepalive interval after the last good one, so when
  /// keepalive interval + request_timeout >= ttl (with the default interval ttl / 3: when
  /// request_timeout >= 2/3 of the TTL, e.g. the default 5 s with ttl=6s) a hold can go
  /// straight from held to *lost* with no *suspect* signal first. Redlock bounds each
  /// master's requests by ttl / 4 when that is shorter: a majority answers for the rest.
  std::chrono::milliseconds request_timeout{std::chrono::seconds{5}};
  /// Bound on session::open in total, every connection attempt and retry included; zero
  /// means request_timeout. Values above request_timeout still give one attempt at most
  /// request_timeout. Set (non-zero), it is also the time the open gives a server to come
  /// back: transient failures are retried until it passes, past retry.max_attempts.
  std::chrono::milliseconds open_timeout{0};
  /// Retries of transient failures inside each operation.
  retry_policy retry{};
  /// Longest time unlock(), a lock's destructor and close() wait for the server to confirm a
  /// removal. An unconfirmed removal goes on in the background (backoff from a few ms) until
  /// it succeeds, the entry is proven gone or the session ends, and unlock(ec) reports
  /// errc::backend_unavailable. A hold already known lost never waits. Must be greater than
  /// zero (session::open fails with errc::invalid_argument): a release that never waited
  /// could never be confirmed.
  std::chrono::milliseconds release_timeout{std::chrono::seconds{1}};
  /// Free text recorded with every entry this session creates (shown by `dlock status`).
  std::string description{};
  /// Opens the session only to look (dlock::inspect, dlock::list_locks); acquiring through
  /// it fails with errc::invalid_argument. SQLite then opens its file read-only and writes
  /// nothing, so a user who may only read the file can look; the server backends still
  /// record a short-lived session.
  bool observe_only{false};
  /// Receives this session's events (observer.hpp): acquires, releases, hold and session
  /// state changes, wake-ups, every backend request with its latency, and the library's
  /// warnings. None by default, which costs nothing.
  std::shared_ptr<dlock::observer> observer{};
};

/// Observable states of a session.
///  - live: the lease is being renewed.
///  - suspended: renewals are failing; the lease may still be valid (holds are *suspect*).
///  - expired: the lease ended or may have ended; every hold is *lost*. Terminal.
///  - closed: close() was called; everything was released. Terminal.
enum class session_state { live, suspended, expired, closed };

/// Returns "live", "suspended", "expired" or "closed".
const char* to_string(session_state s) noexcept;

/// How far apart the processes sharing a lock may be: threads of one process (`memory://`),
/// processes of one host (SQLite), or hosts on a network.
enum class reach : std::uint8_t { process, host, network };

/// What a backend provides, as data: the same for every session opened on one URL form.
/// Code that needs a property asks for it here instead of assuming it from the scheme.
struct backend_capabilities {
  reach scope{reach::network};  ///< how far apart the processes sharing a lock may be
  bool push_wakeups{false};     ///< waiters are woken by the server, not by polling alone
  bool durable_tokens{false};   ///< fencing tokens survive a server restart
  /// Waiters are granted in arrival order (a reader never overtakes a queued writer).
  bool fifo{true};
  /// Shared (reader) holds exist; else a shared acquire fails with errc::unsupported.
  bool shared_locks{true};
  /// list_locks() can name the held locks; else it fails with errc::unsupported.
  bool lists_names{true};
  /// A holder whose process died on this host is freed at once, not after its lease.
  bool frees_dead_process_at_once{false};
  /// A release is confirmed on the caller's thread, its request cut off at release_timeout
  /// (else a remover thread confirms it while the caller waits at most that long).
  bool bounded_remove{false};
  /// force_unlock() can end another client's session (its lease is a record that any client
  /// may delete); else it fails with errc::unsupported.
  bool ends_other_sessions{false};
  /// dlock::semaphore works (a queue the engine decides over, and one wait on many entries);
  /// else acquiring a permit fails with errc::unsupported.
  bool permits{false};
  /// dlock::election works: entries carry a value their owner may change (proclaim), and a
  /// change wakes observers; else campaigning and observing fail with errc::unsupported.
  bool values{false};
  /// A waiter's entry already carries the fencing token it will hold with (inspect() shows
  /// it); else its token is fixed only at the grant (Redlock: the masters' places, which the
  /// entries of one epoch share, are not tokens) and inspect() shows waiters with token 0.
  bool waiter_tokens{true};
  /// When permits is false for a reason of the backend's design, that reason (static text,
  /// quoted by the refusal and by `dlock doctor`); empty otherwise.
  std::string_view no_permits_because{};
  /// When values is false for a reason of the backend's design (or its mode), that reason
  /// (static text, quoted by the refusal and by `dlock doctor`); empty otherwise.
  std::string_view no_values_because{};
  /// When ends_other_sessions is false, why, and what ends a stuck holder instead (static
  /// text, quoted by force_unlock()'s refusal and `dlock unlock --force`); empty otherwise.
  std::string_view no_ending_others_because{};
};

/// A shared handle to one session. Copies refer to the same session; the session is closed
/// when close() is called or the last copy (and the last lock built on it) is destroyed.
///
/// Threads: all members are safe to call concurrently from any thread.
///
/// fork(): a session, and every lock, hold, permit and leadership of it, belongs to the
/// process that opened it. In a forked child, acquiring, releasing, proclaiming, reading an
/// election and inspecting through them fail with errc::invalid_argument, is_held() is false,
/// and destroying or closing them sends nothing (the parent keeps its locks); open a session of
/// the child's own.
/// Not on etcd: gRPC cannot cross fork(), so a child of a process that opened an etcd session is
/// refused one (errc::unsupported); exec() a new program instead. Other calls in the child are
/// undefined.
///
/// URLs (see README): `memory://NAME`, `sqlite:///path/locks.db`, `zk://host:port,.../chroot`,
/// `redis://[user:pass@]host:port[/db]`, `redlock://h1:p1,h2:p2,h3:p3`,
/// `postgres://user:pass@host:port/db`, `mysql://user:pass@host:port/db`. Query parameters
/// `ttl=` (a duration such as `30s`) and `keepalive=` are understood by every backend.
class session {
 public:
  /// Opens a session. Effects: parses the URL, connects, starts renewal. Takes at most about
  /// options.open_timeout (default: request_timeout) in total, across all its attempts.
  /// Errors (thrown as dlock::system_error): invalid_argument (malformed or unknown URL,
  /// bad option), backend_unavailable (server down or silent after retries; the message gives
  /// the attempts and the time spent), permission_denied (bad credentials), unsupported (a
  /// set-up unsafe for any lock: a Redis that evicts keys, a Redis replica or Cluster node, a
  /// SQLite file on a network file system; the message says which and why), backend_error.
  /// Nothing is created on the backend when it fails. With an observer installed, what only
  /// weakens a guarantee here (doctor.hpp) is logged to it as a warning once open.
  [[nodiscard]] static session open(std::string_view url, const session_options& options = {});
  /// Non-throwing form; returns an empty session (operator bool false) on error.
  [[nodiscard]] static session open(std::string_view url, const session_options& options,
                                    std::error_code& ec) noexcept;

  session() noexcept;
  explicit operator bool() const noexcept { return core_ != nullptr; }

  [[nodiscard]] session_state state() const noexcept;
  /// The lease length in force (after the URL's `ttl=` and backend clamping).
  std::chrono::milliseconds ttl() const noexcept;
  /// The URL with any password replaced by `***`.
  std::string url() const;
  /// A random identifier of this session, unique across clients (hex).
  std::string id() const;
  /// What this session's backend provides (FIFO, shared locks, ...). Empty session: defaults.
  backend_capabilities capabilities() const noexcept;

  /// Registers a callback run (on dlock's renewal thread, never under a dlock lock) on every
  /// state change. Keep it short; it must not call close(). Returns a key for
  /// remove_state_callback.
  std::size_t on_state_change(std::function<void(session_state)> callback);
  void remove_state_callback(std::size_t key) noexcept;

  /// Releases every lock of this session (best effort; the lease is the backstop), stops
  /// renewal and disconnects. Waiters on this session fail with errc::session_closed. Waits
  /// at most session_options::release_timeout for the server (not at all when it is known
  /// unreachable: suspended, or a release just went unconfirmed); the rest finishes on a
  /// background thread. Idempotent; never throws.
  void close() noexcept;

  /// For lock types and tests; not part of the stable API.
  const std::shared_ptr<detail::session_core>& core() const noexcept { return core_; }

 private:
  friend class detail::basic_lock;
  explicit session(std::shared_ptr<detail::session_core> core) noexcept;
  std::shared_ptr<detail::session_core> core_;
};

}  // namespace dlock
