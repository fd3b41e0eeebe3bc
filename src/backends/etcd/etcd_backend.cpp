// The etcd backend: etcd's lock recipe (Go's client/v3/concurrency Mutex, `etcdctl lock`)
// as dlock's store of lease-bound entries; the recipe itself is core's (verdict.hpp).
//
// Session: an etcd lease, renewed by keep_alive() over LeaseKeepAlive; a keep-alive answered
// with TTL <= 0 means the server dropped it (session_expired). close() revokes it, which
// deletes every key of the session at once.
//
// One key per lease per lock: the layout names a contender's key by its lease
// ("P/NAME/<lease hex>"), as Go's Mutex does, so two entries of one dlock session on one lock
// (two handles of one session contending, a reader beside a reader, two permits) cannot share
// a key. The session therefore keeps a pool of leases, all renewed together: an entry takes
// the first lease with no key on its lock, and a new lease is granted only when all have one.
// Every key stays exactly in Go's layout; the cost of a second lease is one LeaseGrant, once.
//
// Cost: an uncontended acquire is one Txn (create if absent + the lock's oldest key; a
// candidate's reads its window at once, and other candidates' companions by key), a contended one a
// second Txn for the window its verdict reads (the oldest key and the one created just before its
// own, for a lock's entry; etcd_queue.hpp); a release one DeleteRange (a candidate's: one Txn,
// deleting its key and companion if the companion still holds its record). A waiter watches only
// the key it waits on; a deletion between its listing and its watch is still seen (the watch, set
// up at the present, is followed by one Range of that key); a woken waiter reads its window again,
// never the whole queue, so neither queueing the N-th waiter nor a handoff reads N keys.
#include "backends/etcd/etcd_backend.hpp"

#include <algorithm>
#include <array>

#include "backends/etcd/etcd_client.hpp"
#include "backends/etcd/etcd_config.hpp"
#include "backends/etcd/etcd_doctor.hpp"
#include "backends/etcd/etcd_entries.hpp"
#include "backends/etcd/etcd_keys.hpp"
#include "backends/etcd/etcd_own_check.hpp"
#include "backends/etcd/etcd_queue.hpp"
#include "backends/etcd/etcd_writes.hpp"
#include "core/verdict.hpp"

namespace dlock::detail {
namespace {

using etcd::lock_ranges;
using etcd::own_entry;

class etcd_session final : public backend_session {
 public:
  etcd_session(std::unique_ptr<etcd::client> c, etcd::config cfg, session_info info,
               std::int64_t lease, std::int64_t ttl_s)
      : client_(std::move(c)), cfg_(std::move(cfg)), info_(std::move(info)), ttl_s_(ttl_s) {
    if (lease != 0) own_.add_lease(lease);
  }

  ~etcd_session() override { client_->shut_down(); }

  capabilities caps() const noexcept override {
    return {.scope = reach::network,
            .push_wakeups = true,
            .durable_tokens = true,
            .bounded_remove = true,
            .permits = true,
            .values = true,
            .no_ending_others_because =
                "dlock does not revoke another client's etcd lease (not implemented): stop the "
                "holder's process, or `etcdctl lease revoke ID`, ID being the hex after the "
                "last '/' of the holder's key (`etcdctl get --prefix --keys-only NAME/`)"};
  }

  // One read first: opening reaches no member when no lease is taken (an observer, doctor), so
  // a member that does not answer, or refuses TLS or the user, would otherwise pass.
  result<std::vector<check_finding>> diagnose() override {
    if (auto r = list("dlock-doctor"); !r) return fail(r.error());
    return etcd::findings(static_cast<std::size_t>(std::ranges::count(cfg_.target, ',')) + 1);
  }

  std::optional<std::chrono::milliseconds> granted_ttl() const override {
    if (ttl_s_ <= 0) return std::nullopt;
    return std::chrono::seconds{ttl_s_};
  }

  result<queue_view> enqueue(std::string_view lock, entry_kind kind,
                             std::string_view entry_id) override {
    const lock_ranges r(cfg_.base, lock);
    auto own = own_key(lock, r, kind, entry_id);
    if (!own) return fail(own.error());
    auto sent = steady::now();
    // Go's tryAcquire: create the key if this lease has none on the lock, and read. A lock's
    // entry is created with its record as the value and reads only the queue's first keys: if
    // the new key (the newest) is among them, they are the whole queue, which decides an
    // uncontended acquire in this one Txn; else its window is read next (a contended acquire
    // waits anyway). A candidate's key is created empty (its value is the leader's), its
    // companion beside it, and its window read at once. A retry after a lost reply finds the
    // key in place and reads the whole queue (it does not know its revision).
    std::vector<etcd::txn_op> create;
    if (own->candidate()) {
      create = {etcd::put_op(own->key, {}, own->lease),
                etcd::put_op(own->meta_key, own->record, own->lease)};
      for (auto& op : r.window_reads(own->need, 0)) create.push_back(std::move(op));
    } else {
      create = {etcd::put_op(own->key, own->record, own->lease), r.head_read(own->need)};
    }
    const auto pages = create.size() - (own->candidate() ? 2 : 1);
    auto t = client_->txn({{own->key, false, 0, {}}}, create, r.reads());
    if (!t) return fail(t.error());
    std::optional<etcd::read_view> v;
    if (t->succeeded && t->ranges.size() == pages && pages == 1) {
      const auto& first = t->ranges[0].kvs;
      if (std::ranges::any_of(first, [&](const auto& kv) { return kv.key == own->key; })) {
        const std::array<etcd::range_result, 2> whole{t->ranges[0], t->ranges[0]};
        v = etcd::window_view(r, whole);
      } else {
        // The Txn's revision is the new key's create revision.
        own_.set_revision(lock, entry_id, t->revision);
        auto w = client_->txn({}, r.window_reads(own->need, t->revision), {});
        if (!w) return fail(w.error());
        if (w->ranges.size() != 2) return fail(errc::protocol_error, "etcd Txn: missing ranges");
        v = etcd::window_view(r, w->ranges);
      }
    } else if (t->succeeded && t->ranges.size() == pages) {
      auto w = etcd::with_companions(*client_, r, std::move(t->ranges), own->key, own->meta_key,
                                     own->record);
      if (!w) return fail(w.error());
      v = etcd::window_view(r, *w);
    } else if (!t->succeeded && t->ranges.size() == 2) {
      v = etcd::whole_view(r, t->ranges[0], t->ranges[1]);
    } else {
      return fail(errc::protocol_error, "etcd Txn: missing ranges");
    }
    auto q = settle(lock, std::move(v), entry_id, sent);
    if (!q) return q;
    auto mine = find_entry(q->entries, entry_id);
    if (!mine) {
      // Our lease's key holds another entry (an operator's put), or the lease just ended.
      return fail(errc::backend_error,
                  "etcd key '" + own->key + "' of this session's lease holds another entry");
    }
    own_.set_revision(lock, entry_id, static_cast<std::int64_t>(q->entries[*mine].token));
    return q;
  }

  result<queue_view> list(std::string_view lock) override {
    const lock_ranges r(cfg_.base, lock);
    auto sent = steady::now();
    auto t = client_->txn({}, r.reads(), {});
    if (!t) return fail(t.error());
    if (t->ranges.size() != 2) return fail(errc::protocol_error, "etcd Txn: missing ranges");
    auto v = etcd::whole_view(r, t->ranges[0], t->ranges[1]);
    seen_.remember(lock, v.keys);
    v.q.sent_at = sent;
    return std::move(v.q);
  }

  // The waiter's window again, up to its own key: O(1) keys however long the queue.
  result<queue_view> list_for_waiter(std::string_view lock, std::string_view entry_id) override {
    auto own = own_.find(lock, entry_id);
    if (!own || own->create_revision == 0) return list(lock);
    const lock_ranges r(cfg_.base, lock);
    auto sent = steady::now();
    auto t = client_->txn({}, r.window_reads(own->need, own->create_revision), {});
    if (!t) return fail(t.error());
    if (t->ranges.size() != 2) return fail(errc::protocol_error, "etcd Txn: missing ranges");
    if (!own->candidate()) return settle(lock, etcd::window_view(r, t->ranges), entry_id, sent);
    auto w = etcd::with_companions(*client_, r, std::move(t->ranges), own->key, own->meta_key,
                                   own->record);
    if (!w) return fail(w.error());
    return settle(lock, etcd::window_view(r, *w), entry_id, sent);
  }

  // The entry's key (a candidate's: with its companion, if that still holds its record).
  result<void> remove(std::string_view lock, std::string_view entry_id) override {
    return remove_by(lock, entry_id, std::nullopt);
  }

  // The Txn's own deadline bounds it, so unlock() runs it on the caller's thread, not a
  // remover's (bounded_remove). A Txn cut off is cancelled; if it was applied after all, the
  // engine's retry finds the key gone and counts that as the unconfirmed success it was.
  result<void> remove_until(std::string_view lock, std::string_view entry_id,
                            steady::time_point deadline) override {
    return remove_by(lock, entry_id, deadline);
  }

  result<void> remove_by(std::string_view lock, std::string_view entry_id,
                         std::optional<steady::time_point> deadline) {
    const auto until =
        deadline.value_or(steady::now() + cfg_.request_timeout);  // capped: open_etcd
    return etcd::remove_own(*client_, own_, lock, entry_id, until);
  }

  result<std::uint64_t> set_value(std::string_view lock, std::string_view entry_id,
                                  std::string_view value) override {
    return etcd::proclaim(*client_, own_, lock, entry_id, value);
  }

  // Any change under the lock's prefix after the listing `seen` came from (a key put,
  // deleted, or a value proclaimed) wakes the observer.
  result<void> wait_change(std::string_view lock, const queue_view& seen,
                           steady::time_point deadline, std::stop_token stop) override {
    const lock_ranges r(cfg_.base, lock);
    auto t = client_->txn({}, r.reads(), {});
    if (!t) return fail(t.error());
    if (t->ranges.size() != 2) return fail(errc::protocol_error, "etcd Txn: missing ranges");
    auto now = etcd::whole_view(r, t->ranges[0], t->ranges[1]);
    read_recipes(now.q.entries);
    if (!same_entries(now.q.entries, seen.entries)) return {};
    auto w = client_->await_change(r.prefix, r.end, t->revision + 1, deadline, std::move(stop));
    if (!w) return fail(w.error());
    return {};
  }

  result<void> wait(std::string_view lock, const entry& awaited, steady::time_point deadline,
                    std::stop_token stop) override {
    auto r = wait_knowing(lock, awaited, deadline, std::move(stop));
    if (!r) return fail(r.error());
    return {};
  }

  // Certain only for an entry once listed at the head: then nothing was ahead of it, and the
  // waiter's view holds every entry between it and the waiter (a window's run), which is
  // what the engine's decision without a listing needs. Otherwise the waiter reads its
  // window again: one Txn of O(1) keys.
  result<awaited_fate> wait_knowing(std::string_view lock, const entry& awaited,
                                    steady::time_point deadline, std::stop_token stop) override {
    auto k = seen_.find(lock, awaited.id);
    if (!k) return awaited_fate::unknown;  // not in our last listing: let the engine list again
    auto gone = client_->await_delete(std::span(&k->key, 1), deadline, std::move(stop));
    if (!gone) return fail(gone.error());
    if (!*gone) return awaited_fate::unknown;
    return seen_.forget(lock, awaited.id) ? awaited_fate::left_head : awaited_fate::unknown;
  }

  result<void> wait_any(std::string_view lock, std::span<const entry> awaited,
                        steady::time_point deadline, std::stop_token stop) override {
    std::vector<etcd::watched_key> keys;
    for (const auto& e : awaited) {
      auto k = seen_.find(lock, e.id);
      if (!k) return {};
      keys.push_back(std::move(k->key));
    }
    auto r = client_->await_delete(keys, deadline, std::move(stop));
    if (!r) return fail(r.error());
    return {};
  }

  result<steady::time_point> keep_alive() override {
    auto sent = steady::now();
    const auto leases = own_.leases();
    if (leases.empty()) {
      // An observer holds no lease: a read proves the cluster answers.
      auto r = client_->range(cfg_.base.empty() ? std::string(1, '\0') : cfg_.base, {}, true);
      if (!r) return fail(r.error());
      return sent;
    }
    // A round cut off early is retried early: a keep-alive that a member holds while the
    // cluster elects a leader would otherwise hold the renewals up for the whole request
    // timeout (half the TTL), and after a leader kill the round after it came too late for
    // the lease on our clock (holders told lost: etcd_cluster.holders_keep_their_holds_...).
    auto r = client_->keep_alive(leases, sent + entries_check_budget(info_));
    if (!r) return fail(r.error());
    // One the cluster cannot answer within its budget (an election under way) is dropped, so
    // that it does not hold the next round back either.
    if (auto kept = entries_check_verdict(
            etcd::own_keys_kept(*client_, own_, steady::now() + entries_check_budget(info_)));
        !kept)
      return fail(kept.error());
    return sent;
  }

  void close() noexcept override {
    const auto leases = own_.take_leases();
    // Revoking deletes every key bound to the lease at once; a lease not revoked (server
    // unreachable) ends after its TTL.
    auto deadline = steady::now() + std::min<std::chrono::milliseconds>(info_.request_timeout,
                                                                        std::chrono::seconds{2});
    for (auto id : leases) (void)client_->revoke(id, deadline);
    client_->shut_down();
  }

  result<std::vector<std::string>> lock_names(std::string_view prefix) override {
    std::string begin = cfg_.base + std::string(prefix);
    auto end = etcd::prefix_range_end(begin);
    if (begin.empty()) begin.assign(1, '\0');
    auto r = client_->range(begin, end, true);
    if (!r) return fail(r.error());
    return etcd::lock_names_of(cfg_.base, r->kvs);
  }

  std::vector<std::int64_t> leases() { return own_.leases(); }

 private:
  // The key of entry `entry_id` on `lock`: the one recorded by an earlier attempt (a retry
  // after a lost reply creates nothing twice), else a lease of the pool without a key on this
  // lock, granting one more if every lease has one.
  result<own_entry> own_key(std::string_view lock, const lock_ranges& r, entry_kind kind,
                            std::string_view entry_id) {
    if (info_.observe_only) {
      return fail(errc::unsupported, "an observe-only etcd session writes no entries");
    }
    const bool candidate = entry_id.ends_with("~e");  // candidate_entry_id
    auto make = [&](std::int64_t lease) {
      return own_entry{etcd::lease_key(r.prefix, lease),
                       candidate ? etcd::lease_key(r.meta, lease) : std::string{},
                       etcd::entry_record(kind, entry_id, info_.owner),
                       lease,
                       0,
                       etcd::reads_for(kind, entry_id)};
    };
    for (;;) {
      auto e = own_.take(lock, entry_id, make);
      if (!e) return fail(e.error());
      if (*e) return std::move(**e);
      auto g = client_->grant(ttl_s_);
      if (!g) return fail(g.error());
      own_.add_lease(g->first);
    }
  }

  // A window's view if it decides `entry_id` as the whole queue would (verdict.hpp), else the
  // whole queue; remembers each entry's key for wait().
  result<queue_view> settle(std::string_view lock, std::optional<etcd::read_view> v,
                            std::string_view entry_id, steady::time_point sent) {
    if (v) {
      read_recipes(v->q.entries);
      auto mine = find_entry(v->q.entries, entry_id);
      if (!mine || window_suffices(v->q.entries, *mine, v->gap_at)) {
        seen_.remember(lock, v->keys);
        v->q.sent_at = sent;
        return std::move(v->q);
      }
    }
    return list(lock);
  }

  std::unique_ptr<etcd::client> client_;
  const etcd::config cfg_;
  const session_info info_;
  const std::int64_t ttl_s_;
  etcd::own_entries own_;  // its entries and its pool of leases
  etcd::seen_keys seen_;
};

}  // namespace

result<std::unique_ptr<backend_session>> open_etcd(const url& u, const session_info& info) {
  auto cfg = etcd::parse_config(u, info);
  if (!cfg) return fail(cfg.error());
  // One attempt waits at most half the TTL (at least 0.5 s): a member whose leader died keeps
  // a request it had forwarded to it unanswered for seconds, so a release in flight when the
  // leader was killed kept the lock for the whole request timeout (5 s by default) with a 2 s
  // TTL (the fault run's etcd-3 row). Cut off earlier, the call is retried and reaches the new
  // leader; every write of the recipe is safe to repeat (a put if absent, a delete of the lease's
  // own key).
  cfg->request_timeout =
      std::min(cfg->request_timeout,
               std::max<std::chrono::milliseconds>(info.ttl / 2, std::chrono::milliseconds{500}));
  auto c = etcd::client::open(*cfg);
  if (!c) return fail(c.error());
  // etcd counts leases in whole seconds: round the TTL up.
  auto ttl_s = static_cast<std::int64_t>((info.ttl.count() + 999) / 1000);
  std::int64_t lease = 0, granted = ttl_s;
  if (!info.observe_only) {
    auto g = (*c)->grant(ttl_s);
    if (!g) return fail(g.error());
    lease = g->first;
    granted = g->second;
  }
  return std::make_unique<etcd_session>(std::move(*c), std::move(*cfg), info, lease, granted);
}

std::optional<std::vector<std::int64_t>> etcd_leases(backend_session& b) {
  if (auto* s = dynamic_cast<etcd_session*>(&b.innermost())) return s->leases();
  return std::nullopt;
}

}  // namespace dlock::detail
