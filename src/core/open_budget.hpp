#pragma once
// session::open's total budget. While a session is being opened, the opening thread carries
// the open's deadline, and every backend bounds its connect and handshake by what is left of
// it (connect_bound), so a silent server costs the budget once, not once per attempt. Outside
// an open (reconnects later in the session's life) connect_bound returns its argument.
// Thread-local rather than a session_info field: backends connect on the calling thread during
// open, and a stored deadline would be stale for every later reconnect.

#include <algorithm>
#include <chrono>
#include <optional>

namespace dlock::detail {

inline thread_local std::optional<std::chrono::steady_clock::time_point> open_deadline;

class open_budget_scope {
 public:
  explicit open_budget_scope(std::chrono::steady_clock::time_point deadline) {
    open_deadline = deadline;
  }
  ~open_budget_scope() { open_deadline.reset(); }
  open_budget_scope(const open_budget_scope&) = delete;
  open_budget_scope& operator=(const open_budget_scope&) = delete;
};

// `timeout`, or what is left of the open in progress on this thread if less (at least 1 ms).
inline std::chrono::milliseconds connect_bound(std::chrono::milliseconds timeout) {
  if (!open_deadline) return timeout;
  auto left = std::chrono::ceil<std::chrono::milliseconds>(*open_deadline -
                                                           std::chrono::steady_clock::now());
  return std::clamp(left, std::chrono::milliseconds{1},
                    std::max(timeout, std::chrono::milliseconds{1}));
}

}  // namespace dlock::detail
