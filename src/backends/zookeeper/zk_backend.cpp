// The ZooKeeper backend: the lock recipe of the ZooKeeper documentation ("Locks", "Shared
// Locks") with Curator's protected creation, over one handle per dlock session.
//
// Layout: <chroot>/dlock/<escaped lock name> is a container node (the server deletes it once
// empty); its EPHEMERAL_SEQUENTIAL children are the queue (names in zk_names.hpp), ordered by
// sequence. An entry's fencing token is its czxid: cluster-wide and monotonic, unlike the
// sequence, which restarts when the container is re-created.
//
// Cost: the uncontended cycle is create2 + getChildren + delete, nothing more; the czxid of
// our own entry comes back from create2. A handoff costs the holder's delete and one watch
// notification to the next waiter (the engine needs no getChildren after a certain
// deletion). The czxids of other entries are read only by list() (status tools, or a waiter
// whose wake-up was not a deletion), pipelined, and cached by node name.
#include "backends/zookeeper/zk_backend.hpp"

#include <algorithm>
#include <map>
#include <mutex>
#include <set>

#include "backends/zookeeper/zk_cache.hpp"
#include "backends/zookeeper/zk_config.hpp"
#include "backends/zookeeper/zk_connection.hpp"
#include "backends/zookeeper/zk_fetch.hpp"
#include "backends/zookeeper/zk_names.hpp"
#include "backends/zookeeper/zk_queue.hpp"

namespace dlock::detail {
namespace {

using zk::child_meta;
using zk::connection;

class zk_session final : public backend_session {
 public:
  zk_session(std::unique_ptr<connection> c, std::string base, bool secure, session_info info)
      : conn_(std::move(c)), base_(std::move(base)), info_(std::move(info)) {
    if (secure) {
      secure_acl_[0] = {ZOO_PERM_READ, ZOO_ANYONE_ID_UNSAFE};
      secure_acl_[1] = {ZOO_PERM_ALL, ZOO_AUTH_IDS};
      acl_ = {2, secure_acl_};
    } else {
      acl_ = ZOO_OPEN_ACL_UNSAFE;
    }
  }

  ~zk_session() override { conn_->close(); }

  connection& conn() { return *conn_; }

  capabilities caps() const noexcept override {
    return {.scope = reach::network,
            .push_wakeups = true,
            .durable_tokens = true,
            .bounded_remove = true,
            .permits = true};
  }

  std::optional<std::chrono::milliseconds> granted_ttl() const override {
    return conn_->negotiated_timeout();
  }

  result<queue_view> enqueue(std::string_view lock, entry_kind kind,
                             std::string_view entry_id) override {
    auto lp = lock_path(lock);
    const std::string id(entry_id);
    auto sent = steady::now();
    // A retry after an earlier try created the node but failed later (its getChildren lost
    // to a dropped connection) must not create a second one: that node would block the lock
    // for as long as this session lives.
    bool adopted = cache_.own_path(id).has_value();
    if (!adopted && cache_.uncertain(id)) {
      // An earlier create of this entry may have been applied with its reply lost.
      auto found = adopt(lp, id);
      if (!found) return fail(found.error());
      adopted = *found;
    }
    if (!adopted) {
      if (auto c = create_entry(lp, kind, id); !c) return fail(c.error());
    }
    auto q = read_queue(lp, /*all_tokens=*/false);
    if (!q) return q;
    q->sent_at = sent;
    return q;
  }

  result<queue_view> list(std::string_view lock) override {
    auto sent = steady::now();
    auto q = read_queue(lock_path(lock), /*all_tokens=*/true);
    if (q) q->sent_at = sent;
    return q;
  }

  // A failed removal is retried by the engine's remover threads (session_core) until the
  // node is gone or the session ends.
  result<void> remove(std::string_view lock, std::string_view entry_id) override {
    return remove_entry(lock_path(lock), std::string(entry_id), std::nullopt);
  }

  // The same with the asynchronous calls, waited for until `deadline`: a sync call waits
  // until the client gives up on the server (2/3 of the session timeout). A delete cut off
  // keeps the entry's node in the cache, so the retry deletes it or finds it gone.
  result<void> remove_until(std::string_view lock, std::string_view entry_id,
                            steady::time_point deadline) override {
    return remove_entry(lock_path(lock), std::string(entry_id), deadline);
  }

  result<void> wait(std::string_view lock, const entry& awaited, steady::time_point deadline,
                    std::stop_token stop) override {
    auto r = wait_knowing(lock, awaited, deadline, std::move(stop));
    if (!r) return fail(r.error());
    return {};
  }

  // A deletion seen by the watch is certain, so the engine can take the lock without a
  // getChildren: a handoff costs the holder's delete and one notification, nothing more.
  result<bool> wait_knowing(std::string_view lock, const entry& awaited,
                            steady::time_point deadline, std::stop_token stop) override {
    auto lp = lock_path(lock);
    auto name = cache_.child_with_prefix(lp, zk::entry_prefix(awaited.id));
    if (!name) return false;  // not seen in our last listing: let the engine list again
    return conn_->await_change(lp + "/" + *name, deadline, std::move(stop));
  }

  result<void> wait_any(std::string_view lock, std::span<const entry> awaited,
                        steady::time_point deadline, std::stop_token stop) override {
    auto lp = lock_path(lock);
    std::vector<std::string> paths;
    for (const auto& e : awaited) {
      auto name = cache_.child_with_prefix(lp, zk::entry_prefix(e.id));
      if (!name) return {};  // not seen in our last listing: let the engine list again
      paths.push_back(lp + "/" + *name);
    }
    auto r = conn_->await_any_change(paths, deadline, std::move(stop));
    if (!r) return fail(r.error());
    return {};
  }

  result<steady::time_point> keep_alive() override {
    // A round trip, not just the client's connection state: after this process was paused
    // past the session timeout the client still says "connected" until its I/O thread notices
    // the server closed the session, and renewing on that word revived a lapsed hold (found by
    // the fault run's SIGSTOP). A reply proves the server saw the session alive after `sent`.
    auto sent = steady::now();
    if (auto h = conn_->health(); !h) return fail(h.error());
    {
      auto u = conn_->acquire();
      if (!u) return fail(u.error());
      struct Stat st {};
      int rc = zoo_exists(u->zh(), "/", 0, &st);
      if (rc != ZOK && rc != ZNONODE) return fail(conn_->error(rc, "exists", "/"));
    }
    return sent;
  }

  void set_event_handler(std::function<void(session_event)> handler) override {
    conn_->set_event_handler(std::move(handler));
  }

  void close() noexcept override { conn_->close(); }
  void on_expired() noexcept override { conn_->end_locally(); }

  result<std::vector<std::string>> lock_names(std::string_view prefix) override {
    auto children = get_children(base_);
    if (!children) return fail(children.error());
    std::vector<std::string> names, paths;
    for (auto& c : *children) {
      auto name = zk::unescape_lock_name(c);
      if (!name || !name->starts_with(prefix)) continue;
      names.push_back(std::move(*name));
      paths.push_back(base_ + "/" + c);
    }
    auto reads = fetch(paths);
    if (!reads) return fail(reads.error());
    std::vector<std::string> out;
    for (std::size_t i = 0; i < names.size(); ++i) {
      if ((*reads)[i].rc == ZOK && (*reads)[i].stat.numChildren > 0) out.push_back(names[i]);
    }
    std::sort(out.begin(), out.end());
    return out;
  }

 private:
  std::string lock_path(std::string_view lock) const {
    return base_ + "/" + zk::escape_lock_name(lock);
  }

  result<void> remove_entry(const std::string& lp, const std::string& id,
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
      int rc;
      if (until) {
        rc = conn_->delete_until(*path, *until);
      } else {
        auto u = conn_->acquire();
        if (!u) return fail(u.error());
        rc = zoo_delete(u->zh(), path->c_str(), -1);
      }
      if (rc != ZOK && rc != ZNONODE) return fail(conn_->error(rc, "delete", *path));
      cache_.disown(id);
      if (rc == ZOK) return {};
    }
    cache_.disown(id);
    // Deleted by someone else (the session expired, an operator), or never created.
    return fail(errc::lock_lost, "zookeeper entry " + id + " is gone");
  }

  result<std::vector<std::string>> get_children(const std::string& path) {
    return get_children_until(path, backstop());
  }

  // A deadline for requests without one of their own: the client answers every request (with
  // ZCONNECTIONLOSS if need be), and the session's end cuts them off sooner; only a backstop.
  steady::time_point backstop() const {
    return steady::now() +
           std::max(conn_->negotiated_timeout() * 2, std::chrono::milliseconds{10000});
  }

  result<std::vector<std::string>> get_children_until(const std::string& path,
                                                      steady::time_point deadline) {
    std::vector<std::string> out;
    int rc = conn_->get_children_until(path, deadline, out);
    if (rc == ZNONODE) return std::vector<std::string>{};
    if (rc != ZOK) return fail(conn_->error(rc, "getChildren", path));
    return out;
  }

  result<std::vector<zk::node_read>> fetch(const std::vector<std::string>& paths) {
    if (paths.empty()) return std::vector<zk::node_read>{};
    auto u = conn_->acquire();
    if (!u) return fail(u.error());
    zk::fetch_error err;
    auto reads =
        zk::fetch_nodes(u->zh(), paths, conn_->negotiated_timeout() * 2, conn_->ended(), err);
    if (err.rc == ZCLOSING) err.rc = conn_->ended_rc();
    if (err.rc != ZOK) return fail(conn_->error(err.rc, "getData", err.path));
    return reads;
  }

  // Finds this session's child for entry `id` (from a create whose reply was lost) and
  // adopts it. A node with the id but another owner is never adopted.
  result<bool> adopt(const std::string& lp, const std::string& id) {
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
      cache_.own(id, lp, names[i], {r.stat.czxid, r.stat.ctime, r.data});
      return true;
    }
    return false;
  }

  result<void> create_entry(const std::string& lp, entry_kind kind, const std::string& id) {
    const auto path = lp + "/" + zk::child_prefix(id, kind);
    std::string created;
    for (int attempt = 0;; ++attempt) {
      int rc;
      struct Stat st {};
      rc = conn_->create_until(path, info_.owner, &acl_, ZOO_EPHEMERAL_SEQUENTIAL, backstop(),
                               created, st);
      if (rc == ZOK) {
        cache_.own(id, lp, created.substr(lp.size() + 1), {st.czxid, st.ctime, info_.owner});
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
  result<void> ensure_parent(const std::string& lp) {
    auto u = conn_->acquire();
    if (!u) return fail(u.error());
    int rc = zoo_create(u->zh(), lp.c_str(), nullptr, -1, &acl_, ZOO_CONTAINER, nullptr, 0);
    if (rc == ZOK || rc == ZNODEEXISTS) return {};
    if (rc != ZNONODE) return fail(conn_->error(rc, "create", lp));
    for (std::size_t pos = 1; pos <= base_.size(); ++pos) {
      if (pos != base_.size() && base_[pos] != '/') continue;
      auto p = base_.substr(0, pos);
      rc = zoo_create(u->zh(), p.c_str(), nullptr, -1, &acl_, ZOO_PERSISTENT, nullptr, 0);
      if (rc != ZOK && rc != ZNODEEXISTS) return fail(conn_->error(rc, "create", p));
    }
    rc = zoo_create(u->zh(), lp.c_str(), nullptr, -1, &acl_, ZOO_CONTAINER, nullptr, 0);
    if (rc == ZOK || rc == ZNODEEXISTS) return {};
    return fail(conn_->error(rc, "create", lp));
  }

  // With !all_tokens (enqueue, the hot path) the metadata of entries not yet seen is not
  // read: the grant needs only our own czxid, which create2 returned, and that read was one
  // pipelined round trip per handoff. Such entries carry token 0 until a list() reads them.
  result<queue_view> read_queue(const std::string& lp, bool all_tokens) {
    auto children = get_children(lp);
    if (!children) return fail(children.error());
    auto items =
        zk::dlock_children(*children, [&](const std::string& n) { return cache_.meta(lp, n); });
    std::vector<std::string> missing;
    for (auto& p : items) {
      if (!p.meta && all_tokens) missing.push_back(lp + "/" + p.name);
      if (!p.meta && !all_tokens) p.meta = child_meta{};  // czxid 0: unknown, see zk_cache
    }
    auto reads = fetch(missing);
    if (!reads) return fail(reads.error());
    std::map<std::string, child_meta> fresh;
    for (std::size_t i = 0; i < missing.size(); ++i) {
      auto& r = (*reads)[i];
      if (r.rc != ZOK) continue;  // deleted meanwhile: no longer in the queue
      fresh[missing[i].substr(lp.size() + 1)] = {r.stat.czxid, r.stat.ctime, std::move(r.data)};
    }
    std::vector<std::pair<std::string, child_meta>> present;
    for (auto& p : items) {
      if (!p.meta) {
        auto f = fresh.find(p.name);
        if (f == fresh.end()) continue;
        p.meta = f->second;
      }
      present.emplace_back(p.name, *p.meta);
    }
    cache_.replace(lp, std::move(present));
    return zk::children_to_queue(std::move(items));
  }

  std::unique_ptr<connection> conn_;
  const std::string base_;  // "<chroot>/dlock"
  session_info info_;
  struct ACL secure_acl_[2]{};
  struct ACL_vector acl_ {};
  zk::session_cache cache_;
};

}  // namespace

result<std::unique_ptr<backend_session>> open_zookeeper(const url& u, const session_info& info) {
  auto cfg = zk::parse_url(u, info);
  if (!cfg) return fail(cfg.error());
  auto c = connection::open(cfg->client);
  if (!c) return fail(c.error());
  return std::make_unique<zk_session>(std::move(*c), cfg->chroot + "/dlock", cfg->secure, info);
}

std::optional<zk::client_identity> zookeeper_identity(backend_session& b) {
  if (auto* s = dynamic_cast<zk_session*>(&b)) return s->conn().identity();
  return std::nullopt;
}

std::uint64_t zookeeper_node_events() { return zk::node_event_count(); }

}  // namespace dlock::detail
