#include "backends/zookeeper/zk_cache.hpp"

namespace dlock::detail::zk {
namespace {

// Bounded so that a session which touched many locks once does not grow without end.
constexpr std::size_t max_cached_locks = 4096;

}  // namespace

std::optional<child_meta> session_cache::meta(const std::string& lock,
                                              const std::string& name) const {
  std::lock_guard lk(mu_);
  auto it = children_.find(lock);
  if (it == children_.end()) return std::nullopt;
  auto m = it->second.find(name);
  // czxid 0 marks a child whose name was seen but whose metadata was not read yet.
  if (m == it->second.end() || m->second.czxid == 0) return std::nullopt;
  return m->second;
}

std::optional<std::string> session_cache::child_with_prefix(const std::string& lock,
                                                            const std::string& prefix) const {
  std::lock_guard lk(mu_);
  auto it = children_.find(lock);
  if (it == children_.end()) return std::nullopt;
  // Names sort by their prefix, so the entry's node (if any) is the first one not below it.
  auto m = it->second.lower_bound(prefix);
  if (m == it->second.end() || !m->first.starts_with(prefix)) return std::nullopt;
  return m->first;
}

void session_cache::replace(const std::string& lock,
                            std::vector<std::pair<std::string, child_meta>> present) {
  std::lock_guard lk(mu_);
  std::map<std::string, child_meta> next(std::make_move_iterator(present.begin()),
                                         std::make_move_iterator(present.end()));
  // A listing another thread of this session began before one of our creates must not drop
  // that node's metadata (nor a placeholder hide what was read): our own entry would then
  // be read with czxid 0, its fencing token unknown.
  if (auto old = children_.find(lock); old != children_.end()) {
    for (const auto& [id, n] : own_) {
      if (n.lock != lock) continue;
      if (auto m = old->second.find(n.name); m != old->second.end()) {
        auto& slot = next[n.name];
        if (slot.czxid == 0) slot = m->second;
      }
    }
  }
  if (next.empty()) {
    children_.erase(lock);
    return;
  }
  evict_if_full(lock);
  children_[lock] = std::move(next);
}

void session_cache::own(const std::string& id, const std::string& lock, const std::string& name,
                        child_meta m, std::int32_t version) {
  std::lock_guard lk(mu_);
  uncertain_.erase(id);
  own_[id] = {lock, name, version};
  evict_if_full(lock);
  children_[lock][name] = std::move(m);
}

std::optional<std::string> session_cache::own_path(const std::string& id) const {
  std::lock_guard lk(mu_);
  auto it = own_.find(id);
  if (it == own_.end()) return std::nullopt;
  return it->second.lock + "/" + it->second.name;
}

std::int32_t session_cache::own_version(const std::string& id) const {
  std::lock_guard lk(mu_);
  auto it = own_.find(id);
  return it == own_.end() ? 0 : it->second.version;
}

void session_cache::set_own_version(const std::string& id, std::int32_t version) {
  std::lock_guard lk(mu_);
  if (auto it = own_.find(id); it != own_.end()) it->second.version = version;
}

void session_cache::begin_removal(const std::string& id) {
  std::lock_guard lk(mu_);
  if (auto it = own_.find(id); it != own_.end()) it->second.removing = true;
}

std::vector<std::string> session_cache::live_own_paths() const {
  std::lock_guard lk(mu_);
  std::vector<std::string> out;
  for (const auto& [id, node] : own_) {
    if (!node.removing) out.push_back(node.lock + "/" + node.name);
  }
  return out;
}

void session_cache::disown(const std::string& id) {
  std::lock_guard lk(mu_);
  uncertain_.erase(id);
  auto it = own_.find(id);
  if (it == own_.end()) return;
  const auto& node = it->second;
  if (auto c = children_.find(node.lock); c != children_.end()) {
    c->second.erase(node.name);
    if (c->second.empty()) children_.erase(c);
  }
  own_.erase(it);
}

void session_cache::mark_uncertain(const std::string& id) {
  std::lock_guard lk(mu_);
  uncertain_.insert(id);
}

bool session_cache::uncertain(const std::string& id) const {
  std::lock_guard lk(mu_);
  return uncertain_.contains(id);
}

void session_cache::evict_if_full(const std::string& lock) {
  if (!children_.contains(lock) && children_.size() >= max_cached_locks) children_.clear();
}

}  // namespace dlock::detail::zk
