#pragma once
// Cuts off a blocking request on a connection of its own once its caller can no longer use
// the answer. The client libraries (libmariadb) time a request only by the connection's read
// timeout, fixed when it connects, so a request made to a server that stopped answering (a
// paused process, a black-holed route) would otherwise outlast its caller's deadline by up to
// that timeout. Only for connections that carry nothing else: a cut ends the connection.
//
// One thread per cutter, started by the first arm(); it sleeps until the earliest armed time,
// and is woken by arm() only for a sooner one. A cut may first run an action of its own (a
// session's connection tells its holds they are lost before the cut frees their locks); the
// thread runs it outside its lock, so the action may take its time and call back in.
// Thread safety: arm() and the tickets from any thread.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <thread>
#include <utility>
#include <vector>

#include "backends/common/socket_interrupt.hpp"

namespace dlock::detail {

class request_cutter {
  using clock = std::chrono::steady_clock;
  struct armed {
    std::shared_ptr<socket_interrupt> cut;
    std::function<void()> before;  // may be empty
    bool fired{false};
  };
  using slots = std::map<std::pair<clock::time_point, std::uint64_t>, std::shared_ptr<armed>>;
  using slot = slots::iterator;

 public:
  // Disarms on destruction; fired() tells whether the cut came first.
  class ticket {
   public:
    ticket(request_cutter& owner, std::optional<slot> at, std::shared_ptr<armed> state)
        : owner_(&owner), at_(at), state_(std::move(state)) {}
    ticket(ticket&& o) noexcept
        : owner_(std::exchange(o.owner_, nullptr)), at_(o.at_), state_(std::move(o.state_)) {}
    ticket(const ticket&) = delete;
    ticket& operator=(const ticket&) = delete;
    ticket& operator=(ticket&&) = delete;
    ~ticket() {
      if (!owner_) return;
      std::lock_guard lk(owner_->mu_);
      if (at_ && !state_->fired) owner_->armed_.erase(*at_);
    }
    // Whether the connection was cut at the armed time.
    [[nodiscard]] bool fired() const {
      std::lock_guard lk(owner_->mu_);
      return state_->fired;
    }

   private:
    request_cutter* owner_;
    std::optional<slot> at_;  // none: armed for ever, nothing to cut
    std::shared_ptr<armed> state_;
  };

  request_cutter() = default;
  request_cutter(const request_cutter&) = delete;
  request_cutter& operator=(const request_cutter&) = delete;
  ~request_cutter() {
    if (thread_.joinable()) {
      thread_.request_stop();
      changed_.notify_all();
    }
  }

  // Cuts `cut`'s connection at `at` unless the ticket is destroyed first (never at
  // time_point::max(), a caller without a deadline); runs `before` first, if given.
  [[nodiscard]] ticket arm(clock::time_point at, std::shared_ptr<socket_interrupt> cut,
                           std::function<void()> before = {}) {
    auto state = std::make_shared<armed>();
    state->cut = std::move(cut);
    state->before = std::move(before);
    if (at == clock::time_point::max()) return ticket(*this, std::nullopt, std::move(state));
    std::lock_guard lk(mu_);
    auto it = armed_.emplace(std::make_pair(at, next_++), state).first;
    if (!thread_.joinable()) {
      try {
        thread_ = std::jthread([this](std::stop_token stop) { run(stop); });
      } catch (...) {
        // No thread to be had (a process at its thread limit): nothing is cut this time, and
        // the connection's own timeout ends the request. The next arm() tries again.
        armed_.erase(it);
        return ticket(*this, std::nullopt, std::move(state));
      }
    } else if (at < sleeping_until_) {
      // Only then: a waiter arms once per wait, mostly a later time than the thread's, and
      // waking the thread each time would cost two context switches per wait.
      changed_.notify_all();
    }
    return ticket(*this, it, std::move(state));
  }

 private:
  void run(std::stop_token stop) {
    std::unique_lock lk(mu_);
    while (!stop.stop_requested()) {
      const auto now = clock::now();
      std::vector<std::shared_ptr<armed>> due;
      while (!armed_.empty() && armed_.begin()->first.first <= now) {
        auto first = armed_.begin();
        first->second->fired = true;
        due.push_back(std::move(first->second));
        armed_.erase(first);
      }
      if (!due.empty()) {
        lk.unlock();
        for (auto& d : due) {
          if (d->before) d->before();
          d->cut->interrupt();
        }
        lk.lock();
        continue;  // the actions took time: look again at what is due
      }
      if (armed_.empty()) {
        sleeping_until_ = clock::time_point::max();
        changed_.wait(lk, stop, [&] { return !armed_.empty(); });
      } else {
        // A ticket given up meanwhile leaves this time stale: one wake-up finds nothing due.
        const auto at = armed_.begin()->first.first;
        sleeping_until_ = at;
        changed_.wait_until(lk, stop, at,
                            [&] { return !armed_.empty() && armed_.begin()->first.first < at; });
      }
    }
  }

  mutable std::mutex mu_;
  std::condition_variable_any changed_;
  slots armed_;
  std::uint64_t next_{0};
  // What the thread sleeps until (max: until something is armed); min before it first runs.
  clock::time_point sleeping_until_{clock::time_point::min()};
  std::jthread thread_;  // last: stopped and joined before the members it uses go
};

}  // namespace dlock::detail
