#pragma once
// The deadline of the caller a backend request is made for, where a later answer is of no use
// to it: a waiter's listing after a wake-up is worth nothing once the waiter's deadline has
// passed (lock_handle::wait_for_grant). The engine sets it for the scope of such a call; a
// backend whose requests can be cut off (capabilities::bounded_remove) bounds each request
// made in the scope by it, failing with errc::backend_unavailable and discarding what a late
// reply could still reach, as remove_until does. Others ignore it: their requests still end
// at the request timeout.
// Thread-local, as open_budget.hpp's bound: the engine calls backends on the caller's thread,
// and a parameter would thread through every backend's request paths.

#include <algorithm>
#include <chrono>
#include <optional>

namespace dlock::detail {

inline thread_local std::optional<std::chrono::steady_clock::time_point> caller_request_deadline;

class caller_deadline_scope {
 public:
  // Requests on this thread end by `deadline` (or an earlier one already in force).
  explicit caller_deadline_scope(std::chrono::steady_clock::time_point deadline)
      : outer_(caller_request_deadline) {
    caller_request_deadline = outer_ ? std::min(*outer_, deadline) : deadline;
  }
  ~caller_deadline_scope() { caller_request_deadline = outer_; }
  caller_deadline_scope(const caller_deadline_scope&) = delete;
  caller_deadline_scope& operator=(const caller_deadline_scope&) = delete;

 private:
  std::optional<std::chrono::steady_clock::time_point> outer_;
};

// `own`, or the caller's deadline in force on this thread if that is earlier.
inline std::chrono::steady_clock::time_point within_caller_deadline(
    std::chrono::steady_clock::time_point own) {
  return caller_request_deadline ? std::min(own, *caller_request_deadline) : own;
}
inline std::optional<std::chrono::steady_clock::time_point> within_caller_deadline(
    std::optional<std::chrono::steady_clock::time_point> own) {
  if (!caller_request_deadline) return own;
  return own ? std::min(*own, *caller_request_deadline) : *caller_request_deadline;
}

}  // namespace dlock::detail
