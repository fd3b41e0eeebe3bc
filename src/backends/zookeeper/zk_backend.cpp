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
//
// Values (elections): an entry's value lives in its node's data after the owner, its version
// is the node's stat.version (zk_value.hpp), so nodes written before values, and Curator's,
// read as they always did, at version 0. list() reads the value of the head alone, and only
// when it is a candidate: the leader's, pipelined with its other reads; enqueue() reads none.
// Observers wait on a child watch on the lock node and a data watch on the head.
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
#include "backends/zookeeper/zk_value.hpp"

namespace dlock::detail {
namespace {

using zk::child_meta;
using zk::connection;

class zk_session final : public backend_session {
 public:
  zk_session(std::unique_ptr<connection> c, std::string base, bool secure, bool mutex_as_writer,
             session_info info)
      : conn_(std::move(c)),
        base_(std::move(base)),
        info_(std::move(info)),
        mutex_as_writer_(mutex_as_writer) {
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
            .permits = true,
            .values = true};
  }

  std::optional<std::chrono::milliseconds> granted_ttl() const override {
    return conn_->negotiated_timeout();
  }

  result<queue_view> enqueue(std::string_view lock, entry_kind kind,
                             std::string_view entry_id) override {
    return enqueue_entry(lock, kind, /*mutex=*/false, entry_id);
  }

  // Named as Curator's InterProcessMutex names its nodes ("-lock-"), so that Curator sees it;
  // with ?mutex_names=writer as a writer's, so that an older dlock sees it.
  result<queue_view> enqueue_mutex(std::string_view lock, std::string_view entry_id) override {
    return enqueue_entry(lock, entry_kind::exclusive, /*mutex=*/!mutex_as_writer_, entry_id);
  }

  result<queue_view> enqueue_entry(std::string_view lock, entry_kind kind, bool mutex,
                                   std::string_view entry_id) {
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
      if (auto c = create_entry(lp, kind, mutex, id); !c) return fail(c.error());
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
    auto name = cache_.child_with_prefix(lp, zk::node_prefix(awaited.id));
    if (!name) return false;  // not seen in our last listing: let the engine list again
    return conn_->await_change(lp + "/" + *name, deadline, std::move(stop));
  }

  result<void> wait_any(std::string_view lock, std::span<const entry> awaited,
                        steady::time_point deadline, std::stop_token stop) override {
    auto lp = lock_path(lock);
    std::vector<std::string> paths;
    for (const auto& e : awaited) {
      auto name = cache_.child_with_prefix(lp, zk::node_prefix(e.id));
      if (!name) return {};  // not seen in our last listing: let the engine list again
      paths.push_back(lp + "/" + *name);
    }
    auto r = conn_->await_any_change(paths, deadline, std::move(stop));
    if (!r) return fail(r.error());
    return {};
  }

  // Election observers: the lock node's children and the head's stat, each read with a watch
  // set (zk_queue_watch.cpp), compared with `seen` as list() would have shown them (ids, and
  // the version of the head when it is a candidate). A value set on another entry -- a
  // candidate's own, before it leads -- changes nothing an observer sees, so nothing wakes it.
  result<void> wait_change(std::string_view lock, const queue_view& seen,
                           steady::time_point deadline, std::stop_token stop) override {
    auto pick = [](const std::vector<std::string>& names) -> std::optional<std::string> {
      auto items = zk::dlock_children(names, [](const std::string&) { return std::nullopt; });
      auto head = zk::head_candidate(items);
      if (!head) return std::nullopt;
      return items[*head].name;
    };
    auto unchanged = [&](const zk::watched_queue& now) {
      return same_entries(
          zk::compared_entries(now.children, static_cast<std::uint64_t>(now.head_version)),
          seen.entries);
    };
    return conn_->await_queue_change(lock_path(lock), pick, unchanged, deadline, std::move(stop));
  }

  // setData on this session's own node: only the owner sets its value, and ZooKeeper refuses
  // it once the node went with the session. Conditional on the version this session last gave
  // it, so a set whose reply was lost, retried by the engine, is not counted twice: the retry
  // finds its own value in place and takes that version.
  result<std::uint64_t> set_value(std::string_view, std::string_view entry_id,
                                  std::string_view value) override {
    const std::string id(entry_id);
    auto path = cache_.own_path(id);
    if (!path) return fail(errc::lock_lost, "zookeeper entry " + id + " is gone");
    const auto data = zk::encode_value(info_.owner, value);
    auto expected = cache_.own_version(id);
    for (int attempt = 0;; ++attempt) {
      struct Stat st {};
      int rc = conn_->set_until(*path, data, expected, backstop(), st);
      if (rc == ZOK) {
        cache_.set_own_version(id, st.version);
        return static_cast<std::uint64_t>(st.version);
      }
      if (rc != ZBADVERSION || attempt == 2) return fail(value_failure(rc, *path, id));
      // Someone set it since our last write: our own lost reply, or an operator's zkCli.
      auto reads = fetch({*path});
      if (!reads) return fail(value_failure(reads.error(), id));
      auto& r = reads->front();
      if (r.rc == ZNONODE) return fail(value_failure(ZNONODE, *path, id));
      expected = r.stat.version;
      if (zk::decode_data(std::move(r.data), r.stat.version).value == value) {
        cache_.set_own_version(id, expected);
        return static_cast<std::uint64_t>(expected);
      }
    }
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
      conn_->sent(connection::op::exists);
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
        conn_->sent(connection::op::remove);
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

  // A set_value failure: the entry gone, or its session's lease ended, is lock_lost.
  failure value_failure(int rc, const std::string& path, const std::string& id) {
    if (rc == ZNONODE)
      return {make_error_code(errc::lock_lost), "zookeeper entry " + id + " is gone"};
    return value_failure(conn_->error(rc, "setData", path), id);
  }
  static failure value_failure(failure f, const std::string& id) {
    if (f.code == make_error_code(errc::session_expired)) {
      f.code = make_error_code(errc::lock_lost);
      f.message += " (entry " + id + ")";
    }
    return f;
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
    conn_->sent(connection::op::get_data, paths.size());
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
      auto d = zk::decode_data(std::move(r.data), r.stat.version);
      cache_.own(id, lp, names[i], {r.stat.czxid, r.stat.ctime, std::move(d.owner)},
                 r.stat.version);
      return true;
    }
    return false;
  }

  result<void> create_entry(const std::string& lp, entry_kind kind, bool mutex,
                            const std::string& id) {
    const auto path = lp + "/" + zk::child_prefix(id, kind, mutex);
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
    auto create = [&](const std::string& p, int mode) {
      conn_->sent(connection::op::create);
      return zoo_create(u->zh(), p.c_str(), nullptr, -1, &acl_, mode, nullptr, 0);
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
  result<queue_view> read_queue(const std::string& lp, bool all_tokens) {
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

  std::unique_ptr<connection> conn_;
  const std::string base_;  // "<chroot>/dlock"
  session_info info_;
  const bool mutex_as_writer_;
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
  return std::make_unique<zk_session>(std::move(*c), cfg->chroot + "/dlock", cfg->secure,
                                      cfg->mutex_as_writer, info);
}

std::optional<zk::client_identity> zookeeper_identity(backend_session& b) {
  if (auto* s = dynamic_cast<zk_session*>(&b.innermost())) return s->conn().identity();
  return std::nullopt;
}

std::uint64_t zookeeper_node_events() { return zk::node_event_count(); }

std::optional<zk::request_counts> zookeeper_requests(backend_session& b) {
  if (auto* s = dynamic_cast<zk_session*>(&b.innermost())) return s->conn().sent_counts();
  return std::nullopt;
}

}  // namespace dlock::detail
