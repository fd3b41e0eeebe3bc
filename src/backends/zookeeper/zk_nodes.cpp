#include "backends/zookeeper/zk_nodes.hpp"

#include <algorithm>
#include <map>

#include "backends/zookeeper/zk_names.hpp"
#include "backends/zookeeper/zk_queue.hpp"
#include "backends/zookeeper/zk_value.hpp"
#include "core/caller_deadline.hpp"

namespace dlock::detail::zk {

lock_nodes::lock_nodes(std::unique_ptr<connection> c, std::string base, bool secure,
                       std::string owner)
    : conn_(std::move(c)), base_(std::move(base)), owner_(std::move(owner)) {
  if (secure) {
    secure_acl_[0] = {ZOO_PERM_READ, ZOO_ANYONE_ID_UNSAFE};
    secure_acl_[1] = {ZOO_PERM_ALL, ZOO_AUTH_IDS};
    acl_ = {2, secure_acl_};
    // A tester's first `zk://alice:…@` client left every other identity refused (77) for
    // every lock name in the chroot, for good.
    parent_secure_acl_[0] = {ZOO_PERM_READ | ZOO_PERM_CREATE, ZOO_ANYONE_ID_UNSAFE};
    parent_secure_acl_[1] = {ZOO_PERM_ALL, ZOO_AUTH_IDS};
    parent_acl_ = {2, parent_secure_acl_};
  } else {
    acl_ = ZOO_OPEN_ACL_UNSAFE;
    parent_acl_ = ZOO_OPEN_ACL_UNSAFE;
  }
}

std::string lock_nodes::lock_path(std::string_view lock) const {
  return base_ + "/" + zk::escape_lock_name(lock);
}

result<void> lock_nodes::remove_entry(const std::string& lp, const std::string& id,
                                      std::optional<steady::time_point> until) {
  auto path = cache_.own_path(id);
  if (!path && cache_.uncertain(id)) {
    auto children = until ? get_children_until(lp, *until) : get_children(lp);
    if (!children) return fail(children.error());
    auto prefix = zk::entry_prefix(id);
    for (auto& name : *children) {
      if (name.starts_with(prefix)) path = lp + "/" + name;
    }
  }
  if (path) {
    cache_.begin_removal(id);  // the renewal's check must not take our delete for another's
    // Never the client's synchronous delete: it holds the handle until the server answers,
    // and the session's close waited for it (connection::close).
    int rc = conn_->delete_until(*path, until ? *until : backstop());
    if (rc != ZOK && rc != ZNONODE) return fail(conn_->error(rc, "delete", *path));
    cache_.disown(id);
    if (rc == ZOK) return {};
  }
  cache_.disown(id);
  // Deleted by someone else (the session expired, an operator), or never created.
  return fail(errc::lock_lost, "zookeeper entry " + id + " is gone");
}

result<std::vector<std::string>> lock_nodes::get_children(const std::string& path) {
  return get_children_until(path, backstop());
}

// A set_value failure: the entry gone, or its session's lease ended, is lock_lost.
failure lock_nodes::value_failure(int rc, const std::string& path, const std::string& id) {
  if (rc == ZNONODE)
    return {make_error_code(errc::lock_lost), "zookeeper entry " + id + " is gone"};
  return value_failure(conn_->error(rc, "setData", path), id);
}
failure lock_nodes::value_failure(failure f, const std::string& id) {
  if (f.code == make_error_code(errc::session_expired)) {
    f.code = make_error_code(errc::lock_lost);
    f.message += " (entry " + id + ")";
  }
  return f;
}

// A deadline for requests without one of their own: the request timeout. The client answers
// every request in the end (ZCONNECTIONLOSS), but a paused server only at 2/3 of the session
// timeout, and the session's end cuts them off sooner.
steady::time_point lock_nodes::backstop() const { return steady::now() + conn_->request_timeout(); }

result<std::vector<std::string>> lock_nodes::get_children_until(const std::string& path,
                                                                steady::time_point deadline) {
  std::vector<std::string> out;
  int rc = conn_->get_children_until(path, deadline, out);
  if (rc == ZNONODE) return std::vector<std::string>{};
  if (rc != ZOK) return fail(conn_->error(rc, "getChildren", path));
  return out;
}

result<std::vector<zk::node_read>> lock_nodes::fetch(const std::vector<std::string>& paths) {
  if (paths.empty()) return std::vector<zk::node_read>{};
  auto u = conn_->acquire();
  if (!u) return fail(u.error());
  zk::fetch_error err;
  conn_->sent(connection::op::get_data, paths.size());
  const auto now = steady::now();
  const auto limit = std::max(std::chrono::ceil<std::chrono::milliseconds>(
                                  within_caller_deadline(now + conn_->request_timeout()) - now),
                              std::chrono::milliseconds{0});
  auto reads = zk::fetch_nodes(u->zh(), paths, limit, conn_->ended(), err);
  if (err.rc == ZCLOSING) err.rc = conn_->ended_rc();
  if (err.rc != ZOK) return fail(conn_->error(err.rc, "getData", err.path));
  return reads;
}

// Finds this session's child for entry `id` (from a create whose reply was lost) and
// adopts it. A node with the id but another owner is never adopted.
result<bool> lock_nodes::adopt(const std::string& lp, const std::string& id) {
  auto children = get_children(lp);
  if (!children) return fail(children.error());
  auto prefix = zk::entry_prefix(id);
  std::vector<std::string> names, paths;
  for (auto& n : *children) {
    if (n.starts_with(prefix)) {
      names.push_back(n);
      paths.push_back(lp + "/" + n);
    }
  }
  auto reads = fetch(paths);
  if (!reads) return fail(reads.error());
  for (std::size_t i = 0; i < names.size(); ++i) {
    auto& r = (*reads)[i];
    if (r.rc != ZOK || r.stat.ephemeralOwner != conn_->identity().session_id) continue;
    auto d = zk::decode_data(std::move(r.data), r.stat.version);
    cache_.own(id, lp, names[i], {r.stat.czxid, r.stat.ctime, std::move(d.owner)}, r.stat.version);
    return true;
  }
  return false;
}

result<void> lock_nodes::create_entry(const std::string& lp, entry_kind kind, bool mutex,
                                      const std::string& id) {
  const auto path = lp + "/" + zk::child_prefix(id, kind, mutex);
  std::string created;
  for (int attempt = 0;; ++attempt) {
    int rc;
    struct Stat st {};
    rc =
        conn_->create_until(path, owner_, &acl_, ZOO_EPHEMERAL_SEQUENTIAL, backstop(), created, st);
    if (rc == ZOK) {
      cache_.own(id, lp, created.substr(lp.size() + 1), {st.czxid, st.ctime, owner_});
      return {};
    }
    auto f = conn_->error(rc, "create", path);
    if (rc == ZNONODE && attempt < 4) {
      if (auto p = ensure_parent(lp); !p) return p;
      continue;
    }
    if (is_transient(f)) cache_.mark_uncertain(id);
    return fail(std::move(f));
  }
}

// The lock's container node, and the persistent nodes above it when missing.
result<void> lock_nodes::ensure_parent(const std::string& lp) {
  const auto until = backstop();
  auto create = [&](const std::string& p, int mode) {
    const auto* acl = mode == ZOO_PERSISTENT ? &parent_acl_ : &acl_;
    std::string created;
    struct Stat st {};
    return conn_->create_until(p, std::string_view{}, acl, mode, until, created, st);
  };
  int rc = create(lp, ZOO_CONTAINER);
  if (rc == ZOK || rc == ZNODEEXISTS) return {};
  if (rc != ZNONODE) return fail(conn_->error(rc, "create", lp));
  for (std::size_t pos = 1; pos <= base_.size(); ++pos) {
    if (pos != base_.size() && base_[pos] != '/') continue;
    auto p = base_.substr(0, pos);
    rc = create(p, ZOO_PERSISTENT);
    if (rc != ZOK && rc != ZNODEEXISTS) return fail(conn_->error(rc, "create", p));
  }
  rc = create(lp, ZOO_CONTAINER);
  if (rc == ZOK || rc == ZNODEEXISTS) return {};
  return fail(conn_->error(rc, "create", lp));
}

// With !all_tokens (enqueue, the hot path) the metadata of entries not yet seen is not
// read: the grant needs only our own czxid, which create2 returned, and that read was one
// pipelined round trip per handoff. Such entries carry token 0 until a list() reads them.
// With all_tokens the head's data is read too when it is a candidate (its value changes, so
// no cache serves it): one more request in the same round trip.
result<queue_view> lock_nodes::read_queue(const std::string& lp, bool all_tokens) {
  auto children = get_children(lp);
  if (!children) return fail(children.error());
  auto items =
      zk::dlock_children(*children, [&](const std::string& n) { return cache_.meta(lp, n); });
  // The head candidate's index, or items.size() for none.
  const auto none = items.size();
  const auto head = all_tokens ? zk::head_candidate(items).value_or(none) : none;
  std::vector<std::string> missing;
  for (std::size_t i = 0; i < items.size(); ++i) {
    auto& p = items[i];
    if ((!p.meta && all_tokens) || i == head) missing.push_back(lp + "/" + p.name);
    if (!p.meta && !all_tokens) p.meta = child_meta{};  // czxid 0: unknown, see zk_cache
  }
  auto reads = fetch(missing);
  if (!reads) return fail(reads.error());
  std::map<std::string, zk::node_read> fresh;  // absent: deleted meanwhile
  for (std::size_t i = 0; i < missing.size(); ++i) {
    auto& r = (*reads)[i];
    if (r.rc == ZOK) fresh[missing[i].substr(lp.size() + 1)] = std::move(r);
  }
  std::vector<std::pair<std::string, child_meta>> present;
  for (std::size_t i = 0; i < items.size(); ++i) {
    auto& p = items[i];
    auto f = fresh.find(p.name);
    if (f == fresh.end() && (!p.meta || i == head)) {
      p.meta.reset();  // deleted meanwhile: no longer in the queue
      continue;
    }
    if (f != fresh.end()) {
      const auto& st = f->second.stat;
      auto d = zk::decode_data(std::move(f->second.data), st.version);
      if (!p.meta) p.meta = child_meta{st.czxid, st.ctime, std::move(d.owner)};
      if (i == head) {
        p.value = std::move(d.value);
        p.version = static_cast<std::uint64_t>(st.version);
      }
    }
    present.emplace_back(p.name, *p.meta);
  }
  cache_.replace(lp, std::move(present));
  return zk::children_to_queue(std::move(items));
}

}  // namespace dlock::detail::zk
