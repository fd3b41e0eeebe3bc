#include "core/poll_pacer.hpp"

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <random>

namespace dlock::detail {

std::chrono::microseconds poll_pacer::next() noexcept {
  thread_local std::minstd_rand rng{std::random_device{}()};
  if (long_cap_ > cap_) {
    const auto now = std::chrono::steady_clock::now();
    if (!began_) began_ = now;
    if (now - *began_ >= long_after_) cap_ = long_cap_;
  }
  auto p = pause_.count();
  auto drawn = std::chrono::microseconds{std::uniform_int_distribution<long long>(p / 2, p)(rng)};
  pause_ = std::min(pause_ * 2, cap_);
  return drawn;
}

bool nap_until(std::chrono::steady_clock::time_point until, const std::stop_token& stop) {
  std::mutex m;
  std::condition_variable_any cv;
  std::unique_lock lk(m);
  cv.wait_until(lk, stop, until, [] { return false; });
  return !stop.stop_requested();
}

result<void> poll_until(std::chrono::steady_clock::time_point deadline, const std::stop_token& stop,
                        poll_pacer pacer, const std::function<result<bool>()>& changed) {
  using clock = std::chrono::steady_clock;
  while (!stop.stop_requested() && clock::now() < deadline) {
    if (!nap_until(std::min(deadline, clock::now() + pacer.next()), stop)) break;
    auto r = changed();
    if (!r) return fail(r.error());
    if (*r) return {};
  }
  return {};
}

void idle_wake_pacer::after_wake(bool unchanged, std::chrono::steady_clock::duration waited,
                                 std::chrono::steady_clock::duration listed,
                                 std::chrono::steady_clock::time_point deadline,
                                 const std::stop_token& stop) {
  if (!unchanged || waited > 2 * listed + std::chrono::milliseconds{1}) {
    run_ = 0;
    pace_.reset();
    return;
  }
  if (++run_ <= 3) return;
  if (!pace_) pace_.emplace(std::chrono::milliseconds{1}, std::chrono::milliseconds{50});
  nap_until(std::min(deadline, std::chrono::steady_clock::now() + pace_->next()), stop);
}

}  // namespace dlock::detail
