#include "backends/memory/memory_store.hpp"

#include <memory>

namespace dlock::detail {

void memory_store::purge() {
  auto now = clock();
  if (now < next_expiry) return;
  bool removed = false;
  next_expiry = steady::time_point::max();
  for (auto it = leases.begin(); it != leases.end();) {
    if (it->second <= now) {
      it = leases.erase(it);
      removed = true;
    } else {
      next_expiry = std::min(next_expiry, it->second);
      ++it;
    }
  }
  if (!removed) return;
  for (auto it = queues.begin(); it != queues.end();) {
    erase_entries(it->second, [&](const memory_entry& m) { return !leases.contains(m.session); });
    it = it->second.empty() ? queues.erase(it) : std::next(it);
  }
  notify_observers();
}

void memory_store::set_lease(const std::string& session, steady::time_point end) {
  leases[session] = end;
  next_expiry = std::min(next_expiry, end);
}

bool memory_store::alive(const std::string& session) const {
  auto it = leases.find(session);
  return it != leases.end() && it->second > clock();
}

std::shared_ptr<memory_store> memory_store_named(const std::string& name) {
  // Stores live as long as the process, so a name's tokens never restart; never destroyed,
  // so a thread still using one while the host exits finds it intact.
  static auto* mu = new std::mutex;
  static auto* stores = new std::map<std::string, std::shared_ptr<memory_store>>;
  std::lock_guard lk(*mu);
  auto& s = (*stores)[name];
  if (!s) s = std::make_shared<memory_store>();
  return s;
}

}  // namespace dlock::detail
