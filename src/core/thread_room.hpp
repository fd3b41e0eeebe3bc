#pragma once
// Whether this process can start `n` more threads now, all alive at once. Client libraries
// that start threads of their own take a failure badly: libzookeeper_mt asserts (SIGABRT) when
// pthread_create fails, and gRPC's start hangs or aborts. Asked first, a process at its thread
// or memory limit is refused as any backend out of resources is (a tester's cgroup pids.max
// and ulimit -v). A check, not a reservation: another thread of the host can still take the
// room between the two, but a process that already sits at its limit is caught.

#include <condition_variable>
#include <exception>
#include <mutex>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "core/result.hpp"

namespace dlock::detail {

inline result<void> room_for_threads(int n, const std::string& who) {
  std::mutex mu;
  std::condition_variable cv;
  bool go = false;
  std::vector<std::thread> started;
  std::string error;
  try {
    started.reserve(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) {
      started.emplace_back([&] {
        std::unique_lock lk(mu);
        cv.wait(lk, [&] { return go; });
      });
    }
  } catch (const std::exception& e) {  // std::system_error (EAGAIN), std::bad_alloc
    error = e.what();
  }
  {
    std::lock_guard lk(mu);
    go = true;
  }
  cv.notify_all();
  for (auto& t : started) t.join();
  if (error.empty()) return {};
  return fail(errc::backend_unavailable,
              who + ": cannot start its client's threads (" + error +
                  "): the process is at its thread or memory limit (ulimit -u/-v, cgroup "
                  "pids.max)");
}

}  // namespace dlock::detail
