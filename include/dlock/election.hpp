#pragma once
/// @file election.hpp
/// dlock::election: exactly one leader among the candidates of a name, and everyone can see
/// who, with the leader's value (etcd's concurrency.Election: Campaign, Proclaim, Resign,
/// Leader, Observe; Curator's LeaderLatch).
///
/// Algorithm (written once for every backend, over the same ordered queue as the locks; the
/// ZooKeeper leader election recipe): a candidate is an entry of the election's queue that
/// carries a value; the oldest candidate leads; every other candidate waits only for the one
/// just ahead of it (no herd effect). Leadership is a hold: it has a fencing token (strictly
/// increasing per election: the leader's term), and it is lost, with the loss signal firing,
/// before a successor can be elected -- when its lease ends (a crashed or paused leader is
/// replaced after its lease / session timeout) or an operator ends its session. Only the
/// leader may proclaim, and only while its entry exists (etcd guards Proclaim with the
/// leader key's create revision).
///
/// Needs session::capabilities().values; else campaigning, leader() and observing fail with
/// errc::unsupported. One name is a lock, a semaphore or an election: using it as two fails
/// with errc::invalid_argument naming both.

#include <chrono>
#include <cstdint>
#include <dlock/deadline.hpp>
#include <dlock/errors.hpp>
#include <dlock/hold.hpp>
#include <dlock/session.hpp>
#include <functional>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>

namespace dlock {

namespace detail {
class lock_handle;
}

/// Who leads an election, as a listing saw it.
struct leader_info {
  std::string value;    ///< the leader's value (its campaign value, or the last proclaim)
  fencing_token token;  ///< the leader's term: strictly increasing per election
  /// Counts the leader's values: 1 at its campaign, +1 per proclaim (on Redis and Redlock per
  /// attempt: a proclaim that failed may count too). Only ever increases for one leader.
  std::uint64_t version{0};
  std::string owner;  ///< "host pid=N description" of the leader's session
  std::optional<std::chrono::system_clock::time_point> since;  ///< its campaign, if known
  /// Same leader (term) with the same value. Owner and value are compared as well as token
  /// and version: a store that starts again (a SQLite file deleted and made anew) hands out
  /// token 1 again, and an observer took its new leader for the old one.
  friend bool operator==(const leader_info& a, const leader_info& b) noexcept {
    return a.token == b.token && a.version == b.version && a.owner == b.owner && a.value == b.value;
  }
};

/// Leadership won by election::campaign(), held until resigned or destroyed (RAII; movable,
/// not copyable). Empty when default-constructed, moved-from, resigned, or when a campaign
/// ended without winning. Threads: one leadership must not be used by two threads at once.
class leadership {
 public:
  leadership() noexcept;
  leadership(leadership&&) noexcept;
  /// Resigns what this one held first (as resign()), then takes `other`'s.
  leadership& operator=(leadership&&) noexcept;
  leadership(const leadership&) = delete;
  leadership& operator=(const leadership&) = delete;
  /// Resigns, waiting at most the session's release_timeout (as resign()).
  ~leadership();

  /// True until resigned (a lost leadership is still non-empty: see is_held()).
  explicit operator bool() const noexcept;
  /// True while leading and its lease is valid (see hold::is_held()).
  [[nodiscard]] bool is_held() const noexcept;
  /// The term's fencing token; throws errc::not_held when empty.
  [[nodiscard]] fencing_token token() const;
  /// Stop requested when leadership is lost (see hold::lost_token()): stop leading then.
  [[nodiscard]] std::stop_token lost_token() const noexcept;
  /// End of its lease as this client knows it (see hold::valid_until()); epoch when empty.
  [[nodiscard]] std::chrono::steady_clock::time_point valid_until() const noexcept;
  /// The underlying hold: state, callbacks, suspect signal. Empty when this one is.
  [[nodiscard]] dlock::hold hold() const noexcept;
  /// The value observers see now (the campaign value or the last proclaimed one).
  const std::string& value() const noexcept { return value_; }
  /// The election's name; empty when this one is.
  std::string name() const;

  /// Changes the leader's value without a new election; observers see it. Throws
  /// dlock::system_error: not_held (empty), lock_lost (leadership was lost: its entry is
  /// gone or its lease ended -- nothing was changed), invalid_argument (over 16 KiB),
  /// backend_unavailable, backend_error.
  void proclaim(std::string_view value);

  /// Gives up leadership (etcd's Resign): the next candidate is elected. Waits at most
  /// release_timeout for the server, as basic_lock::unlock(). Empty: nothing.
  void resign() noexcept;
  /// As resign(), reporting not_held (empty), lock_lost, backend_unavailable.
  void resign(std::error_code& ec) noexcept;

 private:
  friend class election;
  leadership(std::unique_ptr<detail::lock_handle> h, std::string value) noexcept;
  std::unique_ptr<detail::lock_handle> impl_;
  std::string value_;
};

/// An election named `name` on `session`'s backend. Threads: an election object may be used
/// by many threads at once (each campaign is its own candidate). A moved-from election refuses
/// campaigns and observing (errc::invalid_argument, thrown or set in ec). Example:
/// @code
///   auto s = dlock::session::open("sqlite:///var/lib/app/locks.db");
///   dlock::election e(s, "billing/primary");
///   auto lead = e.campaign("10.0.0.7:8080");  // blocks until this process leads
///   serve_as_primary(lead.lost_token());      // stop when lead.lost_token() fires
/// @endcode
class election {
 public:
  /// Throws dlock::system_error(invalid_argument) for an empty session or a bad name (as a
  /// lock's).
  election(dlock::session s, std::string_view name);

  /// Blocks until this candidate leads, then returns its leadership; `value` (at most
  /// 16 KiB of bytes) is what observers see. Throws dlock::system_error: invalid_argument (the
  /// name is a lock or a semaphore; the value is too long), unsupported (no values on this
  /// backend), session_expired / session_closed, backend_unavailable, backend_error. Nothing
  /// is left in the backend after an error.
  [[nodiscard]] leadership campaign(std::string_view value);
  /// Waits up to `timeout`; an empty leadership when another candidate still leads.
  template <class Rep, class Period>
  [[nodiscard]] leadership try_campaign_for(std::string_view value,
                                            const std::chrono::duration<Rep, Period>& timeout) {
    return try_campaign_until(value, detail::deadline_after(timeout));
  }
  /// Waits until `deadline`; an empty leadership when another candidate still leads.
  [[nodiscard]] leadership try_campaign_until(std::string_view value,
                                              std::chrono::steady_clock::time_point deadline);
  /// The primitive: waits until `deadline` or `stop`; an empty leadership with ec set
  /// (would_block, timed_out, cancelled, or the failure) when not elected. Never throws.
  [[nodiscard]] leadership campaign(std::string_view value,
                                    std::chrono::steady_clock::time_point deadline,
                                    std::stop_token stop, std::error_code& ec) noexcept;

  /// The current leader, or nullopt when there is no candidate (one request). Throws as
  /// campaign().
  [[nodiscard]] std::optional<leader_info> leader() const;

  /// Waits until the leader differs from `seen` (another term, or a new value; nullopt: none)
  /// and returns it, or returns `seen` when `deadline` passes or `stop` is requested first.
  /// Sees every change that outlasts one round trip; quicker ones may be merged. Throws as
  /// campaign().
  [[nodiscard]] std::optional<leader_info> next_change(
      const std::optional<leader_info>& seen, std::chrono::steady_clock::time_point deadline,
      std::stop_token stop = {}) const;

  /// Calls `on_change` with the current leader at once, then with every change (as
  /// next_change()), in order, on this thread, until `stop` is requested. Throws as
  /// campaign(); an exception from `on_change` propagates.
  void observe(const std::function<void(const std::optional<leader_info>&)>& on_change,
               std::stop_token stop) const;

  const std::string& name() const noexcept { return name_; }
  dlock::session session() const noexcept { return session_; }

 private:
  dlock::session session_;
  std::string name_;
};

}  // namespace dlock
