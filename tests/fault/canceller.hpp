#pragma once
// The fault worker's --cancel-waits: a cancel that races an acquire's own requests.

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <stop_token>
#include <thread>

namespace dlock::fault {

// Cancels one acquire at a time, `delay` after arm(): a thread of its own that spins the last
// stretch, so the cancel lands within microseconds of the chosen moment.
class canceller {
 public:
  canceller() : thread_([this](std::stop_token st) { loop(st); }) {}
  ~canceller() {
    thread_.request_stop();
    cv_.notify_all();
  }
  void arm(std::stop_source target, std::chrono::nanoseconds delay) {
    std::lock_guard lk(mu_);
    target_ = std::move(target);
    at_ = std::chrono::steady_clock::now() + delay;
    armed_ = true;
    cv_.notify_all();
  }
  // Waits until the armed cancel fired (so no cancel of one attempt spills into the next).
  void settle() {
    std::unique_lock lk(mu_);
    cv_.wait(lk, [&] { return !armed_; });
  }

 private:
  void loop(std::stop_token st) {
    std::unique_lock lk(mu_);
    while (!st.stop_requested()) {
      cv_.wait(lk, st, [&] { return armed_; });
      if (!armed_) continue;
      auto at = at_;
      lk.unlock();
      while (std::chrono::steady_clock::now() < at) {
      }
      lk.lock();
      target_.request_stop();
      armed_ = false;
      cv_.notify_all();
    }
  }
  std::mutex mu_;
  std::condition_variable_any cv_;
  std::stop_source target_;
  std::chrono::steady_clock::time_point at_;
  bool armed_{false};
  std::jthread thread_;
};

}  // namespace dlock::fault
