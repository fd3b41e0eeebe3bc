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
  int rc = ZOK;
  {
    auto u = acquire();
    if (!u) rc = ZCLOSING;
    if (rc == ZOK) {
      enlist(lock, armed_children_);
      String_vector v{};
      sent(op::get_children);
      rc = zoo_wget_children(u->zh(), lock.c_str(), &connection::node_watcher, this, &v);
      if (rc == ZOK) {
        now.children.assign(v.data, v.data + v.count);
        deallocate_String_vector(&v);
      } else {
        disarm(lock, armed_children_);  // no node, no watch
      }
    }
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
        struct Stat st {};
        sent(op::exists);
        rc = zoo_wexists(u->zh(), lock.c_str(), &connection::node_watcher, this, &st);
        if (rc == ZOK) differs = true;  // created meanwhile: look again
        if (rc == ZNONODE) rc = ZOK;
        if (rc != ZOK) disarm(lock, armed_);
      }
    } else if (rc == ZOK) {
      if (auto head = pick(now.children)) {
        auto path = lock + "/" + *head;
        enlist(path, armed_);
        char buf[1];  // only its stat is compared; the caller's listing read its value
        int len = sizeof buf;
        struct Stat st {};
        sent(op::get_data);
        rc = zoo_wget(u->zh(), path.c_str(), &connection::node_watcher, this, buf, &len, &st);
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
