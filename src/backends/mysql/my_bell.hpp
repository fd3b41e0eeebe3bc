#pragma once
// Push wake-ups for lease mode's waiters (issue 17): MySQL has no LISTEN/NOTIFY, but it has
// named locks, which a connection holds until it releases them or ends. Each entry has a
// doorbell, the named lock that its owner's (session) connection takes in the enqueue's round
// trip and releases in the removal's (my_schema.cpp: dlock_enqueue_bell, dlock_remove). A
// waiter blocks in GET_LOCK on the doorbell of the entry it waits for, on a connection of its
// own from this pool, and lets it go at once: a release -- or the owner's connection ending --
// wakes it without a single poll, so a release costs the same statements however many wait.
//
// Getting the doorbell says only that its owner let it go: the entry was removed, or its
// owner's connection died (then the next listing purges it), or the owner takes no doorbells
// (a version-3 client), which the caller notices when the entry is still listed after the wake.
//
// Threads: wait() from any thread; each wait holds one connection of the pool for itself, so a
// session has at most `max_conns` waits on doorbells at once. Beyond that a wait is told `full`
// and may wait_slot() for a connection to come back, and connections go to the waits nearest the
// head of their queue first (the smallest awaited token): in a FIFO queue those are the next to
// be woken. When the server refuses another connection the caller polls.

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <set>
#include <stop_token>
#include <string>
#include <vector>

#include "backends/common/request_cutter.hpp"
#include "backends/mysql/my_conn.hpp"

namespace dlock::detail::my {

class bells {
 public:
  enum class rung { yes, timed_out, stopped, full, no_bell };

  // Connections are opened as `t` says (their read timeout raised to `longest` plus
  // `request_timeout`: a GET_LOCK blocks for up to `longest`).
  bells(target t, std::chrono::milliseconds request_timeout, std::chrono::milliseconds longest,
        std::size_t max_conns);
  bells(const bells&) = delete;
  bells& operator=(const bells&) = delete;

  // Blocks on entry `entry_id`'s doorbell until it is got (yes), `until` passes (timed_out:
  // also for a wait the server cannot time finely enough, MySQL's whole seconds), or `stop`
  // (stopped: the connection is cut, so a cancel never waits out the GET_LOCK). no_bell: no
  // connection could be had, or the request failed; the caller then polls.
  rung wait(const std::string& entry_id, std::uint64_t token,
            std::chrono::steady_clock::time_point until, const std::stop_token& stop);

  // After `full`: blocks until a connection is given back (true), or `until` or `stop` (false).
  bool wait_slot(std::uint64_t token, std::chrono::steady_clock::time_point until,
                 const std::stop_token& stop);

  // Closes the idle connections; waits under way close theirs as they end.
  void close() noexcept;

 private:
  // A connection to ring on; one opened here connects by `until` (the waiter's deadline), and
  // is waited for no longer than that, `stop` or close() (my_bell_open.hpp).
  std::unique_ptr<conn> borrow(std::uint64_t token, bool& full,
                               std::chrono::steady_clock::time_point until,
                               const std::stop_token& stop);
  bool first_locked(std::uint64_t token) const {
    return queued_.empty() || token <= *queued_.begin();
  }
  void give_back(std::unique_ptr<conn> c);
  // How long after its GET_LOCK's own time a doorbell's answer may still come before the
  // connection is cut: a round trip on a loaded machine, never a request timeout.
  std::chrono::milliseconds answer_grace() const {
    return std::min(request_timeout_, std::chrono::milliseconds{500});
  }

  target target_;
  std::chrono::milliseconds request_timeout_;
  std::chrono::milliseconds longest_;
  std::size_t max_conns_;
  std::mutex mu_;
  std::vector<std::unique_ptr<conn>> idle_;
  std::size_t open_{0};  // idle and lent out
  std::condition_variable_any returned_;
  std::uint64_t returns_{0};
  std::multiset<std::uint64_t> queued_;  // tokens awaited by the waits in wait_slot()
  bool closed_{false};
  std::stop_source closing_;       // close(): an open under way is given up
  detail::request_cutter cutter_;  // last: its thread ends before the connections it may cut
};

}  // namespace dlock::detail::my
