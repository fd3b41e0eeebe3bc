#pragma once
// Cuts off a blocking request on a connection of its own once its caller can no longer use
// the answer. The client libraries (libmariadb) time a request only by the connection's read
// timeout, fixed when it connects, so a request made to a server that stopped answering (a
// paused process, a black-holed route) would otherwise outlast its caller's deadline by up to
// that timeout. Only for connections that carry nothing else: a cut ends the connection.
//
// One thread per cutter, started by the first arm(); it sleeps until the earliest armed time.
// Thread safety: arm() and the tickets from any thread.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <stop_token>
#include <thread>
#include <utility>

#include "backends/common/socket_interrupt.hpp"

namespace dlock::detail {

class request_cutter {
  using clock = std::chrono::steady_clock;
  struct armed {
    std::shared_ptr<socket_interrupt> cut;
    bool fired{false};
  };

 public:
  // Disarms on destruction; fired() tells whether the cut came first.
  class ticket {
   public:
    ticket(
        request_cutter& owner,
        std::map<std::pair<clock::time_point, std::uint64_t>, std::shared_ptr<armed>>::iterator at,
        std::shared_ptr<armed> state)
        : owner_(&owner), at_(at), state_(std::move(state)) {}
    ticket(const ticket&) = delete;
    ticket& operator=(const ticket&) = delete;
    ~ticket() {
      std::lock_guard lk(owner_->mu_);
      if (!state_->fired) owner_->armed_.erase(at_);
    }
    // Whether the connection was cut at the armed time.
    [[nodiscard]] bool fired() const {
      std::lock_guard lk(owner_->mu_);
      return state_->fired;
    }

   private:
    request_cutter* owner_;
    std::map<std::pair<clock::time_point, std::uint64_t>, std::shared_ptr<armed>>::iterator at_;
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

  // Cuts `cut`'s connection at `at` unless the ticket is destroyed first.
  [[nodiscard]] ticket arm(clock::time_point at, std::shared_ptr<socket_interrupt> cut) {
    auto state = std::make_shared<armed>();
    state->cut = std::move(cut);
    std::lock_guard lk(mu_);
    auto it = armed_.emplace(std::make_pair(at, next_++), state).first;
    if (!thread_.joinable()) {
      thread_ = std::jthread([this](std::stop_token stop) { run(stop); });
    } else if (it == armed_.begin()) {
      changed_.notify_all();  // sooner than what the thread sleeps for
    }
    return ticket(*this, it, std::move(state));
  }

 private:
  void run(std::stop_token stop) {
    std::unique_lock lk(mu_);
    while (!stop.stop_requested()) {
      if (armed_.empty()) {
        changed_.wait(lk, stop, [&] { return !armed_.empty(); });
        continue;
      }
      auto first = armed_.begin();
      if (clock::now() < first->first.first) {
        const auto at = first->first.first;
        const auto seen = next_;
        changed_.wait_until(lk, stop, at, [&] {
          return next_ != seen || armed_.empty() || armed_.begin()->first.first != at;
        });
        continue;
      }
      first->second->fired = true;
      first->second->cut->interrupt();
      armed_.erase(first);
    }
  }

  mutable std::mutex mu_;
  std::condition_variable_any changed_;
  std::map<std::pair<clock::time_point, std::uint64_t>, std::shared_ptr<armed>> armed_;
  std::uint64_t next_{0};
  std::jthread thread_;  // last: stopped and joined before the members it uses go
};

}  // namespace dlock::detail
