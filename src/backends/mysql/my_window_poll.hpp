#pragma once
// One poll per session for the permit waiters of MySQL's lease mode (issue 17). A permit
// waiter waits for any of the N entries just ahead of it to leave (verdict.hpp). A doorbell
// is one named lock and a connection blocks on one, so nothing wakes a wait on N entries:
// these waiters poll. Each on its own, at the waiters' 16 ms cap, 1000 waiters sent 62 000
// statements a second, 217 per release. Here one statement reads which of every entry the
// session's waiters await is alive, and each waiter decides from that answer.
//
// Threads: wait() from any thread; one poll runs at a time, sent by one of the waiting threads.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <span>
#include <stop_token>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/poll_pacer.hpp"
#include "core/result.hpp"

namespace dlock::detail::my {

class window_poll {
 public:
  using id_set = std::unordered_set<std::string>;
  // Which of `ids` are alive (one statement, or a few for many ids).
  using read_alive = std::function<result<id_set>(const std::vector<std::string>&)>;

  // Waits until a poll that started after this call finds some of `ids` gone (those), or
  // `until` passes or `stop` is requested (nullopt). The caller lists again either way. A failed
  // poll is its sender's error; the other waiters poll again.
  result<std::optional<id_set>> wait(std::span<const std::string> ids,
                                     std::chrono::steady_clock::time_point until,
                                     const std::stop_token& stop, const read_alive& read);

 private:
  // As a lone waiter's polls: the first look soon, then backing off to the cap; a poll that
  // finds an entry gone starts over (a release is often followed by another).
  static constexpr std::chrono::microseconds first_pause{1'000};
  static constexpr std::chrono::microseconds max_pause{16'000};

  std::mutex mu_;
  std::condition_variable_any cv_;
  std::unordered_map<std::string, int> wanted_;  // awaited id -> waits awaiting it
  id_set alive_;                                 // the last poll's answer
  std::uint64_t started_{0}, done_{0};           // polls started, the last one answered
  std::uint64_t ended_{0};                       // polls ended, answered or not
  bool polling_{false};
  std::chrono::steady_clock::time_point next_{};
  poll_pacer pacer_{first_pause, max_pause};
};

}  // namespace dlock::detail::my
