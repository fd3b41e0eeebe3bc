#pragma once
// session::open's total budget. Each attempt of an open computes what is left of the budget
// and, for the attempt's duration, the opening thread carries it; every backend bounds each
// connect and handshake by it (connect_bound), so a silent server costs the budget once, not
// once per attempt. One value per attempt, not a deadline: Redlock connects to its masters one
// after another, and a silent first master must not leave nothing for the others. Outside an
// open (reconnects later in the session's life) connect_bound returns its argument.
// Thread-local rather than a session_info field: backends connect on the calling thread during
// open, and a stored bound would wrongly apply to every later reconnect. SQLite has no
// connect: its waits for another connection's write lock share the bound (open_sqlite).

#include <algorithm>
#include <chrono>
#include <optional>

namespace dlock::detail {

inline thread_local std::optional<std::chrono::milliseconds> open_attempt_bound;

class open_attempt_scope {
 public:
  // The attempt may use what is left until `deadline` (at least 1 ms).
  explicit open_attempt_scope(std::chrono::steady_clock::time_point deadline) {
    auto left =
        std::chrono::ceil<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    open_attempt_bound = std::max(left, std::chrono::milliseconds{1});
  }
  ~open_attempt_scope() { open_attempt_bound.reset(); }
  open_attempt_scope(const open_attempt_scope&) = delete;
  open_attempt_scope& operator=(const open_attempt_scope&) = delete;
};

// `timeout`, or the bound of the open attempt in progress on this thread if that is less.
inline std::chrono::milliseconds connect_bound(std::chrono::milliseconds timeout) {
  return open_attempt_bound ? std::min(timeout, *open_attempt_bound) : timeout;
}

}  // namespace dlock::detail
