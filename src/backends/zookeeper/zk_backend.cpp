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
#include <vector>

#include "backends/zookeeper/zk_cache.hpp"
#include "backends/zookeeper/zk_config.hpp"
#include "backends/zookeeper/zk_connection.hpp"
#include "backends/zookeeper/zk_doctor.hpp"
#include "backends/zookeeper/zk_fetch.hpp"
#include "backends/zookeeper/zk_names.hpp"
#include "backends/zookeeper/zk_nodes.hpp"
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
      : nodes_(std::move(c), std::move(base), secure, info.owner),
        info_(std::move(info)),
        mutex_as_writer_(mutex_as_writer) {}

  ~zk_session() override { conn_->close(); }

  connection& conn() { return *conn_; }

  capabilities caps() const noexcept override {
    return {.scope = reach::network,
            .push_wakeups = true,
            .durable_tokens = true,
            .bounded_remove = true,
            .permits = true,
            .values = true,
            .no_ending_others_because =
                "a ZooKeeper session ends only by its own client or its timeout: stop the "
                "holder's process"};
  }

  std::optional<std::chrono::milliseconds> granted_ttl() const override {
    return conn_->negotiated_timeout();
  }

  result<std::vector<check_finding>> diagnose() override {
    // Against the timeout asked (`session_timeout=6s` asks 6 s, whatever the TTL): a tester
    // was told the ensemble shortened 15 s to the 6 s asked for.
    return zk::findings(conn_->requested_timeout(), conn_->negotiated_timeout());
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
    auto lp = nodes_.lock_path(lock);
    const std::string id(entry_id);
    auto sent = steady::now();
    // A retry after an earlier try created the node but failed later (its getChildren lost
    // to a dropped connection) must not create a second one: that node would block the lock
    // for as long as this session lives.
    bool adopted = cache_.own_path(id).has_value();
    if (!adopted && cache_.uncertain(id)) {
      // An earlier create of this entry may have been applied with its reply lost.
      auto found = nodes_.adopt(lp, id);
      if (!found) return fail(found.error());
      adopted = *found;
    }
    if (!adopted) {
      if (auto c = nodes_.create_entry(lp, kind, mutex, id); !c) return fail(c.error());
    }
    auto q = nodes_.read_queue(lp, /*all_tokens=*/false);
    if (!q) return q;
    q->sent_at = sent;
    return q;
  }

  result<queue_view> list(std::string_view lock) override {
    auto sent = steady::now();
    auto q = nodes_.read_queue(nodes_.lock_path(lock), /*all_tokens=*/true);
    if (q) q->sent_at = sent;
    return q;
  }

  // A woken waiter decides from the children's names alone (sequence order; its own token is
  // cached since its create): one getChildren, however long the queue and however many of
  // the entries it saw have left. list() would read every child it has not seen (N reads
  // for a waiter whose view predates N departures).
  result<queue_view> list_for_waiter(std::string_view lock, std::string_view) override {
    auto sent = steady::now();
    auto q = nodes_.read_queue(nodes_.lock_path(lock), /*all_tokens=*/false);
    if (q) q->sent_at = sent;
    return q;
  }

  // A failed removal is retried by the engine's remover threads (session_core) until the
  // node is gone or the session ends.
  result<void> remove(std::string_view lock, std::string_view entry_id) override {
    return nodes_.remove_entry(nodes_.lock_path(lock), std::string(entry_id), std::nullopt);
  }

  // The same with the asynchronous calls, waited for until `deadline`: a sync call waits
  // until the client gives up on the server (2/3 of the session timeout). A delete cut off
  // keeps the entry's node in the cache, so the retry deletes it or finds it gone.
  result<void> remove_until(std::string_view lock, std::string_view entry_id,
                            steady::time_point deadline) override {
    return nodes_.remove_entry(nodes_.lock_path(lock), std::string(entry_id), deadline);
  }

  // A delete the server refused for lack of permission (ZNOAUTH: the lock node's ACL lacks
  // DELETE for this client) stays refused until an operator changes the ACL, while the
  // ephemeral node blocks the lock for as long as the session lives. Only the session's end
  // removes it, and needs no permission: the engine ends the session. Connection loss and
  // timeouts keep being retried; so does anything else the server says (a throttled request).
  bool refusal_is_final(const failure& f) const override {
    return f.code == make_error_code(errc::permission_denied);
  }

  result<void> wait(std::string_view lock, const entry& awaited, steady::time_point deadline,
                    std::stop_token stop) override {
    auto r = wait_knowing(lock, awaited, deadline, std::move(stop));
    if (!r) return fail(r.error());
    return {};
  }

  // A deletion seen by the watch is certain, so the engine can take the lock without a
  // getChildren: a handoff costs the holder's delete and one notification, nothing more.
  result<awaited_fate> wait_knowing(std::string_view lock, const entry& awaited,
                                    steady::time_point deadline, std::stop_token stop) override {
    auto lp = nodes_.lock_path(lock);
    auto name = cache_.child_with_prefix(lp, zk::node_prefix(awaited.id));
    // Not seen in our last listing: let the engine list again.
    if (!name) return awaited_fate::unknown;
    auto gone = conn_->await_change(lp + "/" + *name, deadline, std::move(stop));
    if (!gone) return fail(gone.error());
    return *gone ? awaited_fate::left : awaited_fate::unknown;
  }

  result<void> wait_any(std::string_view lock, std::span<const entry> awaited,
                        steady::time_point deadline, std::stop_token stop) override {
    auto lp = nodes_.lock_path(lock);
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
    return conn_->await_queue_change(nodes_.lock_path(lock), pick, unchanged, deadline,
                                     std::move(stop));
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
      int rc = conn_->set_until(*path, data, expected, nodes_.backstop(), st);
      if (rc == ZOK) {
        cache_.set_own_version(id, st.version);
        return static_cast<std::uint64_t>(st.version);
      }
      if (rc != ZBADVERSION || attempt == 2) return fail(nodes_.value_failure(rc, *path, id));
      // Someone set it since our last write: our own lost reply, or an operator's zkCli.
      auto reads = nodes_.fetch({*path});
      if (!reads) return fail(nodes_.value_failure(reads.error(), id));
      auto& r = reads->front();
      if (r.rc == ZNONODE) return fail(nodes_.value_failure(ZNONODE, *path, id));
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
    auto own = cache_.live_own_paths();
    // Asynchronous, cut off by the session's end: a synchronous call holds the handle until
    // the server answers or the client gives the connection up (2/3 of the session timeout),
    // and the close waited for it (a tester's `dlock run -w 1s` on a paused server exited
    // after 12 s).
    const auto until = steady::now() + conn_->request_timeout();
    if (own.empty()) {
      int rc = conn_->exists_until("/", until);
      if (rc != ZOK && rc != ZNONODE) return fail(conn_->error(rc, "exists", "/"));
      return sent;
    }
    // With entries, the round trip is a multi of `check`s that they are all still there (one
    // request, as the exists was). A node deleted by another client (an operator's deleteall,
    // a script tidying the tree) has let the next waiter in while its holder still held; the
    // holder must hear of it now, not at its release. As after force_unlock on the backends
    // that have it, the session ends: every hold lost, the session to be opened again.
    constexpr std::size_t per_request = 1000;  // far below the server's 1 MB packet limit
    for (std::size_t at = 0; at < own.size(); at += per_request) {
      auto n = std::min(per_request, own.size() - at);
      std::vector<std::string> batch(own.begin() + static_cast<std::ptrdiff_t>(at),
                                     own.begin() + static_cast<std::ptrdiff_t>(at + n));
      std::size_t missing = n;
      int rc = conn_->check_until(batch, until, missing);
      if (rc == ZOK) continue;
      if (rc != ZNONODE) return fail(conn_->error(rc, "multi", own[at]));
      std::string gone = missing < n ? batch[missing] : std::string{};
      // Our own release may have deleted it since the list was taken: no news then.
      auto live = cache_.live_own_paths();
      if (gone.empty() || std::find(live.begin(), live.end(), gone) == live.end()) continue;
      return fail(errc::session_expired,
                  "zookeeper node " + gone +
                      " of this session was deleted by another client (an operator?): its lock "
                      "may have been granted to another, so every hold of this session is lost");
    }
    return sent;
  }

  void set_event_handler(std::function<void(session_event)> handler) override {
    conn_->set_event_handler(std::move(handler));
  }

  void close() noexcept override { conn_->close(); }
  // The lease ended on our side, and its holds were told: the handle goes too. Kept, it
  // reconnected after a partition a little longer than the TTL with the same session (the
  // server had not expired it yet), and the lock node of a hold told *lost* stayed on the
  // server until the holder closed its session (a tester's other clients timed out).
  void on_expired() noexcept override { conn_->close(); }

  result<std::vector<std::string>> lock_names(std::string_view prefix) override {
    auto children = nodes_.get_children(nodes_.base());
    if (!children) return fail(children.error());
    std::vector<std::string> names, paths;
    for (auto& c : *children) {
      auto name = zk::unescape_lock_name(c);
      if (!name || !name->starts_with(prefix)) continue;
      names.push_back(std::move(*name));
      paths.push_back(nodes_.base() + "/" + c);
    }
    auto reads = nodes_.fetch(paths);
    if (!reads) return fail(reads.error());
    std::vector<std::string> out;
    for (std::size_t i = 0; i < names.size(); ++i) {
      if ((*reads)[i].rc == ZOK && (*reads)[i].stat.numChildren > 0) out.push_back(names[i]);
    }
    std::sort(out.begin(), out.end());
    return out;
  }

 private:
  // The znodes; conn_ and cache_ name its connection and cache for the requests above.
  zk::lock_nodes nodes_;
  connection* const conn_{&nodes_.conn()};
  zk::session_cache& cache_{nodes_.cache()};
  session_info info_;
  const bool mutex_as_writer_;
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

std::optional<zk::request_counts> zookeeper_requests(backend_session& b) {
  if (auto* s = dynamic_cast<zk_session*>(&b.innermost())) return s->conn().sent_counts();
  return std::nullopt;
}

}  // namespace dlock::detail
