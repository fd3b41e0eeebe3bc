#pragma once
/// @file hold.hpp
/// One acquisition of a lock: its fencing token and its loss signal.
///
/// What a hold does NOT guarantee: no lease-based lock can stop a holder that is paused
/// (GC, SIGSTOP, VM migration) or partitioned from acting after its lease ended. Pass the
/// fencing token to every resource you write and have the resource refuse a token lower
/// than the highest it has seen (Kleppmann, "How to do distributed locking", 2016; the
/// sequencer of Burrows, "The Chubby lock service", OSDI 2006).

#if __cplusplus < 202002L
#error "dlock needs C++20 or later: compile with -std=c++20 (or a later standard)"
#endif

#include <chrono>
#include <compare>
#include <cstdint>
#include <functional>
#include <memory>
#include <stop_token>
#include <string>

namespace dlock {

namespace detail {
class hold_core;
}

/// A fencing token: strictly greater than every token handed out before for the same lock
/// name, across holders, crashes and client restarts (per-backend caveats in the README).
struct fencing_token {
  std::uint64_t value{0};
  friend auto operator<=>(const fencing_token&, const fencing_token&) = default;
};

/// State of a hold.
///  - held: the lease is being renewed.
///  - suspect: renewal is failing; the lease is still valid until valid_until().
///  - lost: the lease lapsed or may have (session expired, entry gone). Terminal.
///  - released: unlock() was called while the lease still held. Terminal. An unlock() after
///    the lease had ended (even before dlock noticed) ends the hold lost, and says lock_lost.
enum class hold_state { held, suspect, lost, released };

/// Returns "held", "suspect", "lost" or "released".
const char* to_string(hold_state s) noexcept;

/// A view of one acquisition, shared with the lock handle that made it. Cheap to copy.
/// Threads: all members are safe to call from any thread.
class hold {
 public:
  hold() noexcept = default;
  explicit hold(std::shared_ptr<detail::hold_core> core) noexcept : core_(std::move(core)) {}

  explicit operator bool() const noexcept { return core_ != nullptr; }

  [[nodiscard]] fencing_token token() const noexcept;
  [[nodiscard]] hold_state state() const noexcept;
  /// True while state() is held or suspect and the lease deadline has not passed. Always
  /// false in a forked child of the process that took the hold: the hold is its parent's
  /// (state() there still shows the parent's view).
  /// Checks the steady clock itself, so it is right even if dlock's threads were paused.
  [[nodiscard]] bool is_held() const noexcept;
  /// The end of the lease as this client knows it, on the steady clock, measured from when
  /// the last successful renewal (or the acquire) was *sent*, minus a drift allowance
  /// (1% of the TTL + 2 ms, as in Redlock). The server cannot grant the lock to anyone
  /// else before this instant unless clocks drift more than that.
  [[nodiscard]] std::chrono::steady_clock::time_point valid_until() const noexcept;
  /// Stop requested when the hold becomes lost, also when that is found only by unlock().
  /// Not when it is released: unlock(), the lock's destructor and session::close() of a hold
  /// whose lease still held end it as `released` and leave this token untouched,
  /// so a loop that must also stop then should test is_held() too:
  /// `while (h.is_held()) { ... }` (is_held() is false once lost or released).
  [[nodiscard]] std::stop_token lost_token() const noexcept;
  /// Stop requested the first time the hold becomes suspect or lost.
  [[nodiscard]] std::stop_token suspect_token() const noexcept;
  /// The lock name.
  const std::string& name() const noexcept;

  /// Registers a callback run on every state change (on a dlock thread; keep it short).
  /// If the hold is already lost or released, it runs at once on the calling thread. It may
  /// unlock or release what it watches; a session::close() from it waits up to
  /// release_timeout for the server, holding that dlock thread (close elsewhere).
  void on_state_change(std::function<void(hold_state)> callback) const;

  /// For lock types and tests; not part of the stable API.
  const std::shared_ptr<detail::hold_core>& core() const noexcept { return core_; }

 private:
  std::shared_ptr<detail::hold_core> core_;
};

}  // namespace dlock
