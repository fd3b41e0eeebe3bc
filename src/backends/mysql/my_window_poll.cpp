#include "backends/mysql/my_window_poll.hpp"

#include <algorithm>

namespace dlock::detail::my {

using steady = std::chrono::steady_clock;

result<std::optional<window_poll::id_set>> window_poll::wait(std::span<const std::string> ids,
                                                             steady::time_point until,
                                                             const std::stop_token& stop,
                                                             const read_alive& read) {
  std::unique_lock lk(mu_);
  for (const auto& id : ids) ++wanted_[id];
  // A poll that started before these were wanted did not ask for them.
  const auto need = started_ + 1;
  auto forget = [&] {
    for (const auto& id : ids) {
      if (auto it = wanted_.find(id); it != wanted_.end() && --it->second == 0) wanted_.erase(it);
    }
  };
  std::uint64_t seen = 0;
  for (;;) {
    if (done_ >= need && done_ != seen) {
      seen = done_;
      id_set gone;
      for (const auto& id : ids) {
        if (!alive_.contains(id)) gone.insert(id);
      }
      if (!gone.empty()) {
        forget();
        return std::optional<id_set>(std::move(gone));
      }
    }
    const auto now = steady::now();
    if (stop.stop_requested() || now >= until) {
      forget();
      return std::optional<id_set>();
    }
    if (!polling_ && now >= next_) {
      polling_ = true;
      const auto mine = ++started_;
      std::vector<std::string> all;
      all.reserve(wanted_.size());
      for (const auto& [id, n] : wanted_) all.push_back(id);
      lk.unlock();
      auto r = read(all);
      lk.lock();
      polling_ = false;
      ++ended_;
      if (!r) {
        next_ = steady::now() + pacer_.next();
        cv_.notify_all();
        forget();
        return fail(r.error());
      }
      const bool gone = std::ranges::any_of(all, [&](const auto& id) { return !r->contains(id); });
      alive_ = std::move(*r);
      done_ = mine;
      if (gone) pacer_ = poll_pacer{first_pause, max_pause};
      next_ = steady::now() + pacer_.next();
      cv_.notify_all();
      continue;
    }
    // Woken when a poll ends (answered or failed), or when the next one is due (then this
    // thread may send it).
    const auto ended = ended_;
    cv_.wait_until(lk, stop, polling_ ? until : std::min(until, next_),
                   [&] { return ended_ != ended; });
  }
}

}  // namespace dlock::detail::my
