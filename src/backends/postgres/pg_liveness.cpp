#include "backends/postgres/pg_liveness.hpp"

#include <algorithm>

namespace dlock::detail::pg {

void shared_liveness::track(const std::vector<std::string>& ids) {
  std::lock_guard lk(mu_);
  for (const auto& id : ids) ++awaited_[id];
}

void shared_liveness::forget(const std::vector<std::string>& ids) {
  std::lock_guard lk(mu_);
  for (const auto& id : ids) {
    auto it = awaited_.find(id);
    if (it == awaited_.end() || --it->second > 0) continue;
    awaited_.erase(it);
    last_.erase(id);
  }
}

result<shared_liveness::answer> shared_liveness::recent(const std::vector<std::string>& ids,
                                                        std::chrono::milliseconds max_age,
                                                        listener::until_t until) {
  std::lock_guard lk(mu_);
  auto now = std::chrono::steady_clock::now();
  bool covered = now - at_ <= max_age && std::all_of(ids.begin(), ids.end(), [&](const auto& id) {
                   return last_.count(id);
                 });
  if (!covered) {
    std::vector<std::string> all;
    all.reserve(awaited_.size() + ids.size());
    for (const auto& [id, n] : awaited_) all.push_back(id);
    for (const auto& id : ids) {
      if (!awaited_.count(id)) all.push_back(id);
    }
    auto sent = std::chrono::steady_clock::now();
    auto lives = listener_.alive_all(all, until);
    if (!lives) return fail(lives.error());
    last_.clear();
    for (std::size_t i = 0; i < all.size(); ++i) last_[all[i]] = (*lives)[i];
    at_ = sent;
    now = std::chrono::steady_clock::now();
  }
  auto age = std::chrono::duration_cast<std::chrono::milliseconds>(now - at_);
  answer out;
  out.reserve(ids.size());
  for (const auto& id : ids) {
    auto l = last_[id];
    if (l) l->lease -= age;
    out.push_back(l);
  }
  return out;
}

}  // namespace dlock::detail::pg
