// Redlock: removals a master missed, retried per master in the background until they succeed
// or the session closes (an entry left on a minority would block other clients).
#include <algorithm>
#include <random>
#include <thread>

#include "backends/redis/redis_session.hpp"

namespace dlock::detail::redis {

void session::retry_missed(std::string_view lock, std::string_view id,
                           const std::vector<result<reply_ptr>>& replies, bool tombstone) {
  std::lock_guard lk(mu_);
  if (closed_) return;  // close() removes every own entry itself
  if (missed_.empty()) missed_.resize(nodes_.size());
  bool any = false;
  for (std::size_t i = 0; i < replies.size(); ++i) {
    if (replies[i]) continue;
    auto& list = missed_[i];
    bool known = std::ranges::any_of(list, [&](const own_entry& e) { return e.id == id; });
    // Bounded: past this, close() (which deletes the session key) is the cleanup.
    if (!known && list.size() < 10000)
      list.push_back({std::string(lock), std::string(id), false, tombstone});
    any = true;
  }
  if (!any) return;
  if (!retrier_.joinable()) {
    retrier_ = std::jthread([this](std::stop_token st) { retry_loop(st); });
  }
  retry_cv_.notify_all();
}

void session::cancel_retry(std::unique_lock<std::mutex>& lk, std::string_view id) {
  for (auto& list : missed_) std::erase_if(list, [&](const own_entry& e) { return e.id == id; });
  retry_cv_.wait(lk, [&] { return !retrying_.contains(id); });
}

void session::retry_loop(std::stop_token stop) {
  constexpr auto first = std::chrono::milliseconds{5}, longest = std::chrono::milliseconds{1000};
  std::vector<std::chrono::milliseconds> backoff(nodes_.size(), first);
  std::vector<steady::time_point> next(nodes_.size(), steady::time_point{});
  std::unique_lock lk(mu_);
  while (!stop.stop_requested()) {
    auto now = steady::now();
    auto wake = steady::time_point::max();
    std::optional<std::size_t> due;
    for (std::size_t i = 0; i < missed_.size() && !due; ++i) {
      if (missed_[i].empty()) continue;
      if (next[i] <= now)
        due = i;
      else
        wake = std::min(wake, next[i]);
    }
    if (!due) {
      auto pending = [&] {
        for (std::size_t i = 0; i < missed_.size(); ++i) {
          if (!missed_[i].empty() && next[i] <= steady::now()) return true;
        }
        return false;
      };
      if (wake == steady::time_point::max())
        retry_cv_.wait(lk, stop, pending);
      else
        retry_cv_.wait_until(lk, stop, wake, pending);
      continue;
    }
    const auto i = *due;
    auto& list = missed_[i];
    std::vector<own_entry> batch(list.begin(),
                                 list.begin() + std::min<std::ptrdiff_t>(64, list.size()));
    for (const auto& e : batch) retrying_.insert(e.id);
    lk.unlock();
    // release_script removes only this session's entries, wherever they are (queue or
    // lone-holder key), and wakes their waiters; an entry already gone counts as removed.
    auto r = nodes_[i]->run({&release_script, release_argv(batch, false)}, stop);
    lk.lock();
    for (const auto& e : batch) retrying_.erase(e.id);
    if (r) {
      std::erase_if(missed_[i], [&](const own_entry& e) {
        return std::ranges::any_of(batch, [&](const own_entry& b) { return b.id == e.id; });
      });
      backoff[i] = first;
      next[i] = {};
    } else {
      next[i] = steady::now() + backoff[i];
      backoff[i] = std::min(backoff[i] * 2, longest);
    }
    retry_cv_.notify_all();
  }
}

}  // namespace dlock::detail::redis
