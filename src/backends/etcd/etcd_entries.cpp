#include "backends/etcd/etcd_entries.hpp"

namespace dlock::detail::etcd {

std::string own_entries::key_of(std::string_view lock, std::string_view id) {
  std::string k(lock);
  k += '\0';
  k += id;
  return k;
}

result<std::optional<own_entry>> own_entries::take(
    std::string_view lock, std::string_view id,
    const std::function<own_entry(std::int64_t)>& make) {
  const auto k = key_of(lock, id);
  std::lock_guard g(mu_);
  if (auto it = own_.find(k); it != own_.end()) return std::optional(it->second);
  if (leases_.empty()) return fail(errc::session_expired, "the etcd session is closed");
  auto& used = used_[std::string(lock)];
  for (auto lease : leases_) {
    if (used.contains(lease)) continue;
    used.insert(lease);
    auto e = make(lease);
    own_.emplace(k, e);
    return std::optional(std::move(e));
  }
  return std::optional<own_entry>{};
}

void own_entries::add_lease(std::int64_t lease) {
  std::lock_guard g(mu_);
  leases_.push_back(lease);
}

std::optional<own_entry> own_entries::find(std::string_view lock, std::string_view id) {
  std::lock_guard g(mu_);
  auto it = own_.find(key_of(lock, id));
  if (it == own_.end()) return std::nullopt;
  return it->second;
}

void own_entries::set_revision(std::string_view lock, std::string_view id, std::int64_t rev) {
  std::lock_guard g(mu_);
  if (auto it = own_.find(key_of(lock, id)); it != own_.end()) it->second.create_revision = rev;
}

void own_entries::mark_unsure(std::string_view lock, std::string_view id) {
  std::lock_guard g(mu_);
  if (auto it = own_.find(key_of(lock, id)); it != own_.end()) it->second.remove_unsure = true;
}

void own_entries::begin_removal(std::string_view lock, std::string_view id) {
  std::lock_guard g(mu_);
  if (auto it = own_.find(key_of(lock, id)); it != own_.end()) it->second.removing = true;
}

std::vector<std::pair<std::string, std::int64_t>> own_entries::live_keys() {
  std::lock_guard g(mu_);
  std::vector<std::pair<std::string, std::int64_t>> out;
  for (const auto& [k, e] : own_) {
    if (e.create_revision > 0 && !e.removing && !e.remove_unsure)
      out.emplace_back(e.key, e.create_revision);
  }
  return out;
}

void own_entries::forget(std::string_view lock, std::string_view id) {
  std::lock_guard g(mu_);
  const auto it = own_.find(key_of(lock, id));
  if (it == own_.end()) return;
  const auto lease = it->second.lease;
  const bool unsure = it->second.remove_unsure;
  own_.erase(it);
  auto u = used_.find(std::string(lock));
  if (u != used_.end() && !unsure) {
    u->second.erase(lease);
    if (u->second.empty()) used_.erase(u);
  }
}

std::vector<std::int64_t> own_entries::leases() {
  std::lock_guard g(mu_);
  return leases_;
}

std::vector<std::int64_t> own_entries::take_leases() {
  std::lock_guard g(mu_);
  std::vector<std::int64_t> out;
  out.swap(leases_);
  return out;
}

}  // namespace dlock::detail::etcd
