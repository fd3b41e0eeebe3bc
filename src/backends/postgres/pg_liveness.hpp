#pragma once
// Re-checks of awaited entries shared by a session's waiters (issue 17). A waiter that no
// NOTIFY has woken re-checks its predecessor's session now and then (a holder whose
// connection ended never NOTIFYs). Done by each waiter on its own backoff, those checks grew
// with the number of waiters times how long each waits: 1.13 server transactions per release
// with 10 waiters, 17.9 with 100. Here the waiter due first checks every entry the session's
// waiters await, in one round trip, and the others read its answer while it is recent
// enough. Thread-safe.

#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "backends/postgres/pg_listener.hpp"

namespace dlock::detail::pg {

class shared_liveness {
 public:
  using answer = std::vector<std::optional<listener::liveness>>;

  explicit shared_liveness(listener& l) : listener_(l) {}
  shared_liveness(const shared_liveness&) = delete;

  // Counts `ids` as awaited (by one more waiter) until forget(ids).
  void track(const std::vector<std::string>& ids);
  void forget(const std::vector<std::string>& ids);

  // The liveness of `ids`, in their order, as of at most `max_age` ago: the last shared check
  // if it covered them that recently (each lease shortened by the check's age), else one new
  // check of every tracked id (listener::alive_all, ending by `until`). Errors are the
  // listener's.
  result<answer> recent(const std::vector<std::string>& ids, std::chrono::milliseconds max_age,
                        listener::until_t until = std::nullopt);

 private:
  listener& listener_;
  std::mutex mu_;  // held across the shared check: a waiter due meanwhile reads its answer
  std::map<std::string, int> awaited_;
  std::map<std::string, std::optional<listener::liveness>> last_;
  std::chrono::steady_clock::time_point at_{};  // when the last check was sent
};

}  // namespace dlock::detail::pg
