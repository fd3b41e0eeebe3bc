#include "core/retry.hpp"

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <random>

namespace dlock::detail {

bool backoff_sleep(const retry_policy& policy, int attempt,
                   std::chrono::steady_clock::time_point deadline, std::stop_token stop) {
  using namespace std::chrono;
  thread_local std::minstd_rand rng{std::random_device{}()};
  auto cap = policy.base_delay * (1LL << std::min(attempt, 20));
  cap = std::min<milliseconds>(cap, policy.max_delay);
  auto us = duration_cast<microseconds>(cap).count();
  auto pause = microseconds{us > 0 ? std::uniform_int_distribution<long long>(0, us)(rng) : 0};
  auto until = std::min(steady_clock::now() + pause, deadline);
  std::mutex m;
  std::condition_variable_any cv;
  std::unique_lock lk(m);
  cv.wait_until(lk, stop, until, [] { return false; });
  return !stop.stop_requested() && steady_clock::now() < deadline;
}

}  // namespace dlock::detail
