// The wait of an election's observers (wait_change): pushed by watches, never polled. The
// watches are set by the very requests whose answers are compared with the caller's view, so
// nothing can change unseen between that comparison and the wait.
#include "backends/zookeeper/zk_connection.hpp"

namespace dlock::detail::zk {

result<void> connection::await_queue_change(
    const std::string& lock,
    const std::function<std::optional<std::string>(const std::vector<std::string>&)>& pick,
    const std::function<bool(const watched_queue&)>& unchanged, steady::time_point deadline,
    std::stop_token stop) {
  using watch_it = decltype(watches_)::iterator;
  std::vector<std::pair<watch_it, std::uint64_t>> mine;  // map iterators stay valid
  // Before each request: its event may be delivered before the call returns.
  auto enlist = [&](const std::string& path, std::set<std::string, std::less<>>& armed) {
    std::lock_guard lk(mu_);
    auto it = watches_.try_emplace(path).first;
    ++it->second.waiters;
    mine.emplace_back(it, it->second.generation);
    armed.insert(path);
  };
  auto disarm = [&](const std::string& path, std::set<std::string, std::less<>>& armed) {
    std::lock_guard lk(mu_);
    armed.erase(path);
  };
  watched_queue now;
  bool differs = false;
  std::string where = lock;  // the path of a failed request
  // Each request until the caller's deadline: a synchronous call would wait for a server
  // that stopped answering until the client gives up on it (2/3 of the session timeout).
  int rc = ZOK;
  enlist(lock, armed_children_);
  rc = watch_children_until(lock, deadline, now.children);
  if (rc != ZOK) disarm(lock, armed_children_);  // no node (or no answer), no watch
  if (rc == ZNONODE) {
    // The container is reaped once empty: an election nobody stands in has none. Its
    // creation is the next change; an exists watch is the only one a missing node takes,
    // and only worth leaving when the caller saw no queue either.
    rc = ZOK;
    differs = !unchanged(now);
    if (!differs) {
      {
        std::lock_guard lk(mu_);
        armed_.insert(lock);
      }
      rc = watch_exists_until(lock, deadline);
      if (rc == ZOK) differs = true;  // created meanwhile: look again
      if (rc == ZNONODE) rc = ZOK;
      if (rc != ZOK) disarm(lock, armed_);
    }
  } else if (rc == ZOK) {
    if (auto head = pick(now.children)) {
      auto path = lock + "/" + *head;
      enlist(path, armed_);
      // Only its stat is compared; the caller's listing read its value.
      struct Stat st {};
      rc = watch_data_until(path, deadline, &st);
      if (rc == ZOK) now.head_version = st.version;
      if (rc != ZOK) {
        disarm(path, armed_);
        where = path;
      }
      // Gone since the listing: the queue differs (its deletion fired the child watch).
      if (rc == ZNONODE) {
        rc = ZOK;
        differs = true;
      }
    }
    if (rc == ZOK && !differs) differs = !unchanged(now);
  }
  std::unique_lock lk(mu_);
  auto changed = [&] {
    for (const auto& [it, generation] : mine) {
      if (it->second.generation != generation) return true;
    }
    return false;
  };
  if (rc == ZOK && !differs)
    cv_.wait_until(lk, stop, deadline, [&] { return changed() || ended_; });
  for (const auto& [it, generation] : mine) {
    if (--it->second.waiters == 0) watches_.erase(it);
  }
  lk.unlock();
  if (rc == ZOK) return {};
  return fail(error(rc, "watch", where));
}

}  // namespace dlock::detail::zk
