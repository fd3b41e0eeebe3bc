#pragma once
// Runs a job that may block on a server which stopped answering, and waits for it only so
// long: a close must not hold its caller (often a destructor) past release_timeout, and a
// waiter must not be held past its deadline by a connect that cannot be cut off (MariaDB's
// doorbell). The job runs on a detached thread, which drops what the job owns before saying it
// is done (the last reference to a session may go with it). With no thread to be had, the job
// runs on the caller's thread, unbounded.
//
// Threads: any. A job that outlives the wait goes on alone: what it shares with the caller
// must be owned jointly (a shared_ptr), never borrowed from the caller's stack.

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <stop_token>
#include <thread>

namespace dlock::detail {

// True when `job` finished before `until`, `stop` or `also_stop`.
inline bool run_aside(std::function<void()> job, std::chrono::steady_clock::time_point until,
                      const std::stop_token& stop = {},
                      const std::stop_token& also_stop = {}) noexcept {
  struct done_flag {
    std::mutex mu;
    std::condition_variable_any cv;
    bool done{false};
  };
  std::shared_ptr<done_flag> flag;
  try {
    flag = std::make_shared<done_flag>();
    std::thread([job, flag]() mutable {
      job();
      job = nullptr;
      std::lock_guard lk(flag->mu);
      flag->done = true;
      flag->cv.notify_all();
    }).detach();
  } catch (...) {
    job();
    return true;
  }
  try {
    // Registered before the lock: one already requested runs here, at once.
    std::stop_callback on_also(also_stop, [&flag] {
      std::lock_guard g(flag->mu);
      flag->cv.notify_all();
    });
    std::unique_lock lk(flag->mu);
    return flag->cv.wait_until(lk, stop, until, [&] {
      return flag->done || also_stop.stop_requested();
    }) && flag->done;
  } catch (...) {
    return false;  // not waiting is safe: the job goes on without us
  }
}

}  // namespace dlock::detail
