#pragma once
// A TimedLockable mutex for waits that must end by a deadline. std::timed_mutex's
// try_lock_until goes through pthread_mutex_clocklock, which GCC 12's ThreadSanitizer does not
// intercept: it then reports every unlock as one of an unlocked mutex (the CI's TSan stage
// failed so). This one is a flag under a std::mutex and a condition variable, which it sees.
// Threads: any; as a mutex, unlocked by the thread that locked it.

#include <chrono>
#include <condition_variable>
#include <mutex>

namespace dlock::detail {

class timed_gate {
 public:
  void lock() {
    std::unique_lock lk(mu_);
    free_.wait(lk, [&] { return !held_; });
    held_ = true;
  }
  bool try_lock() {
    std::lock_guard lk(mu_);
    if (held_) return false;
    held_ = true;
    return true;
  }
  template <class Clock, class Duration>
  bool try_lock_until(const std::chrono::time_point<Clock, Duration>& until) {
    std::unique_lock lk(mu_);
    if (!free_.wait_until(lk, until, [&] { return !held_; })) return false;
    held_ = true;
    return true;
  }
  void unlock() {
    {
      std::lock_guard lk(mu_);
      held_ = false;
    }
    free_.notify_one();
  }

 private:
  std::mutex mu_;
  std::condition_variable free_;
  bool held_{false};
};

}  // namespace dlock::detail
