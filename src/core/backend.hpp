#pragma once
// The backend interface: the smallest storage surface the lock recipes need.
//
// A lock name owns an ordered queue of lease-bound entries. The recipes (verdict.hpp) decide
// from a snapshot of the queue whether an entry holds and, if not, which entries it must wait
// for. A backend only stores, lists, removes and waits; it never decides who holds.
//
// Contract for every backend (the conformance suite checks it):
//  - Thread safety: every member may be called concurrently from many threads. wait() must
//    not block other calls (do not hold the connection's mutex while waiting).
//  - enqueue() is idempotent on entry_id: a retry after a lost reply finds the entry it
//    created instead of creating a second one. entry_id is unique per session and attempt.
//  - Entries are listed in queue order. Each entry's token is a fencing token: strictly
//    greater than every token given before to an entry of the same lock name, also across
//    client restarts; queue order is token order.
//  - An entry lives as long as its session's lease: keep_alive() renews the lease of every
//    entry of the session; entries of a session that stopped renewing are removed (or
//    ignored by list()) after the TTL. A backend that can tell a dead process sooner may.
//  - remove() removes only this session's entry with that id. An entry that is not there any
//    more (its lease ended and it was purged or is ignored, an operator deleted it, an
//    advisory unlock found nothing held) is errc::lock_lost: the engine's unlock() reports it,
//    while an abandoned wait and a retried removal take it as done. Any other failure leaves
//    the entry possibly in place: the engine retries it in the background until it is gone
//    or the session ends.
//  - Transient faults (connection refused/reset, timeouts, server busy) are reported as
//    errc::backend_unavailable, which the engine retries with backoff; everything else is
//    final. A lost lease is errc::session_expired.

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <dlock/doctor.hpp>
#include <dlock/session.hpp>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"

namespace dlock::detail {

using steady = std::chrono::steady_clock;

// Backends store exclusive and shared; a permit and an election's candidate are stored as
// exclusive, what they are in their id (verdict.hpp: permit_entry_id, candidate_entry_id),
// and the engine reads it back from the id.
enum class entry_kind : std::uint8_t { exclusive, shared, permit, candidate };

// The largest value an entry may carry (capabilities::values): a leader's address or a small
// record, as etcd's election values are, not a payload store.
inline constexpr std::size_t max_value_size = 16 * 1024;

// Members ordered to leave no padding: the memory backend stores one per held lock.
struct entry {
  std::string id;  // the client-chosen entry id (session id + attempt counter)
  entry_kind kind{entry_kind::exclusive};
  std::uint32_t limit{0};  // a permit's semaphore limit (engine-side, from the id)
  std::uint64_t token{0};
  std::string owner;                                           // for status tools
  std::optional<std::chrono::system_clock::time_point> since;  // creation time, if known
  std::optional<std::chrono::milliseconds> lease_left;         // if known
  // Set by its owner with set_value() (capabilities::values): the version counts the sets
  // (0: never set, so no value), etcd's Proclaim over the leader key.
  std::string value{};
  std::uint64_t version{0};
};

// A holder the backend knows is there but cannot list as an entry, so it has no id to wait
// on: another server connection holding a database's native lock (?mode=advisory: the server
// keeps no queue), or in a Redlock view whatever keeps an own entry off a majority when no
// one entry can be named. It stands just ahead of entries[before]. The recipe counts it there
// as a holder of the deciding entry's recipe (verdict.hpp); an entry it keeps out waits for
// the queue to change (wait_change), not for an entry.
struct unlisted_holder {
  std::size_t before{0};
  entry_kind kind{entry_kind::exclusive};  // exclusive or shared
  std::string owner;                       // for status tools, as entry::owner; may be empty
};

// A snapshot of one lock's queue. sent_at is the steady time at which the request that
// produced it was sent (after any client-side queueing), so a grant's lease is measured from
// before the server could have applied it.
struct queue_view {
  std::vector<entry> entries;
  steady::time_point sent_at{};
  std::vector<unlisted_holder> unlisted{};  // by `before`, ascending; usually empty
};

// Whether two listings of one lock show the same entries with the same values (ids and
// versions): what wait_change() compares, after it registers for a wake-up, against the
// caller's view, so a change between the caller's listing and the wait is not missed.
inline bool same_entries(const std::vector<entry>& a, const std::vector<entry>& b) noexcept {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i].id != b[i].id || a[i].version != b[i].version) return false;
  }
  return true;
}

// same_entries(), and the same unlisted holders in the same places: what the engine compares
// to tell a wake-up that changed nothing from one that did.
inline bool same_queue(const queue_view& a, const queue_view& b) noexcept {
  if (!same_entries(a.entries, b.entries) || a.unlisted.size() != b.unlisted.size()) return false;
  for (std::size_t i = 0; i < a.unlisted.size(); ++i) {
    if (a.unlisted[i].before != b.unlisted[i].before || a.unlisted[i].kind != b.unlisted[i].kind)
      return false;
  }
  return true;
}

// What a wait learned about the entry it waited on (backend_session::wait_knowing).
enum class awaited_fate : std::uint8_t {
  unknown,    // it may still be there (a timeout, a spurious wake-up): list again
  left,       // it left the queue
  left_head,  // it left while at the head of the queue: every entry ahead of it had gone
};

// What a backend provides, as data the engine, the CLI and the conformance suite read
// (public: dlock::backend_capabilities, session::capabilities()).
using capabilities = dlock::backend_capabilities;

// What the engine tells a backend about the session opening it.
struct session_info {
  std::string id;     // random hex, unique across clients
  std::string owner;  // "host pid=N description"
  std::chrono::milliseconds ttl{};
  std::chrono::milliseconds request_timeout{};
  bool observe_only{false};  // session_options::observe_only: list only, write nothing if possible
  // The TTL was chosen (session_options::ttl, --ttl or the URL's ttl=), not the default: a
  // backend parameter that also sets the lease (ZooKeeper's session_timeout) must then agree.
  bool ttl_given{false};
};

// Events a backend with a native session (ZooKeeper) pushes to the engine.
enum class session_event { suspended, reconnected, expired };

// What a renewal does with its check that the session's own entries are still stored, made
// after the lease was renewed: only the verdict "one is gone" (session_expired) ends the
// session. A check that could not be answered (busy, no leader, refused) is made again next
// round; counted as a failed renewal, it let the lease lapse on the client's clock while the
// server kept it (fault_run_etcd-3, 2026-12-05).
inline result<void> entries_check_verdict(result<void> checked) {
  if (!checked && checked.error().code == make_error_code(errc::session_expired)) return checked;
  return {};
}

// What the check may take: a sixth of the TTL (at least 100 ms, at most the request timeout).
// A check held up (an etcd election; a DBA's lock on a SQL server's entries table) must not
// hold the next renewal back: a round and a retry then still fit in half the TTL.
inline std::chrono::milliseconds entries_check_budget(const session_info& info) {
  return std::clamp<std::chrono::milliseconds>(
      info.ttl / 6, std::chrono::milliseconds{100},
      std::max(info.request_timeout, std::chrono::milliseconds{100}));
}

class backend_session {
 public:
  virtual ~backend_session() = default;

  virtual capabilities caps() const noexcept = 0;

  // The backend's own session under any decorators the engine put around it (the request
  // observer): what a backend's introspection hooks downcast.
  virtual backend_session& innermost() noexcept { return *this; }

  // The lease actually granted (a server may clamp the requested TTL). Default: as asked.
  virtual std::optional<std::chrono::milliseconds> granted_ttl() const { return std::nullopt; }

  // The id of this session's n-th entry: unique across clients, and beginning with what
  // the backend's storage orders by where that matters (Redlock: the time it was made).
  // Default: the session id, '-', n in hex.
  virtual std::string entry_id(std::string_view session_id, std::uint64_t n) const;

  // Appends an entry of `kind` with id `entry_id` to the queue of `lock` (or finds it, if a
  // previous attempt with the same id got through) and returns the queue including it.
  // Only the new entry's token must be known here (the grant needs it); other entries may
  // carry token 0 when reading theirs would cost a round trip. A backend may also leave out
  // entries ahead of the one the new entry waits on (Redis does, for an exclusive entry
  // joining behind another): the verdict only needs that one. list() gives every entry and
  // every token.
  virtual result<queue_view> enqueue(std::string_view lock, entry_kind kind,
                                     std::string_view entry_id) = 0;

  // enqueue() of a mutex's (or recursive mutex's) entry. The verdict treats it as any
  // exclusive entry; a backend whose entries other libraries read may name it as those
  // libraries name a mutex's, apart from a shared_mutex writer's, a permit's or a candidate's
  // (ZooKeeper: Curator's InterProcessMutex "-lock-", its read/write lock's "__WRIT__").
  // Idempotent on entry_id like enqueue(). Default: enqueue(lock, exclusive, entry_id).
  virtual result<queue_view> enqueue_mutex(std::string_view lock, std::string_view entry_id) {
    return enqueue(lock, entry_kind::exclusive, entry_id);
  }

  // The current queue of `lock`, without entries whose lease has lapsed.
  virtual result<queue_view> list(std::string_view lock) = 0;

  // The queue as the waiter of this session's entry `entry_id` re-reads it after a wake-up:
  // list()'s entries in list()'s order, except that other sessions' entries may come without
  // token, creation time or owner (0, empty): a verdict needs only ids, kinds and order. A
  // backend that pays a request per entry for those (ZooKeeper: one read per node) skips them
  // here, so that a handoff's cost does not grow with the queue. It may also give only what
  // the waiter's verdict reads (verdict_reads: etcd), as enqueue() may. Default: list().
  virtual result<queue_view> list_for_waiter(std::string_view lock, std::string_view entry_id) {
    (void)entry_id;
    return list(lock);
  }

  // Removes this session's entry `entry_id` of `lock`. lock_lost if it was not there (or its
  // session's lease had ended): see the contract above.
  virtual result<void> remove(std::string_view lock, std::string_view entry_id) = 0;

  // remove(), given up at `deadline` (roughly: a request in flight may overrun it by a few
  // ms) with errc::backend_unavailable -- the entry possibly still in place, so the engine
  // retries it. Only meaningful with capabilities::bounded_remove. A request cut off must
  // leave nothing behind that could take its late reply for the answer to another request
  // (discard the connection) or act on it harmfully. Default: remove(), unbounded.
  virtual result<void> remove_until(std::string_view lock, std::string_view entry_id,
                                    steady::time_point deadline) {
    (void)deadline;
    return remove(lock, entry_id);
  }

  // Whether `f`, a failed remove() of this session's own entry, is a refusal the server will
  // keep making (not a lost connection or a busy server): the entry then stays for as long
  // as the session lives, blocking its lock, so the engine ends the session -- every hold
  // told lost first, then close() -- for the server to drop the session's entries. False:
  // the removal is retried until the entry is gone or the session ends. Default: false.
  virtual bool refusal_is_final(const failure& f) const {
    (void)f;
    return false;
  }

  // Blocks until `awaited` may be gone from `lock`'s queue, `deadline` passes, or `stop` is
  // requested -- whichever is first; may also return spuriously, like a condition variable
  // (the engine lists again after every return), so polling is always correct. Returns an
  // error only for a failure worth reporting (the engine re-checks state anyway).
  virtual result<void> wait(std::string_view lock, const entry& awaited,
                            steady::time_point deadline, std::stop_token stop) = 0;

  // wait() on several entries: returns when any of `awaited` may be gone (same contract).
  // The semaphore recipe waits on the N entries ahead of a waiter. The default waits on each
  // in turn for a short slice (correct, but late by up to a slice per entry): a backend with
  // capabilities::permits overrides it with one wait on all of them.
  virtual result<void> wait_any(std::string_view lock, std::span<const entry> awaited,
                                steady::time_point deadline, std::stop_token stop);

  // Blocks until `lock`'s queue may differ from `seen` -- an entry joined or left, a value
  // was set, or one of seen.unlisted let go -- or `deadline` or `stop`; may return spuriously
  // (the caller lists again). Election observers wait here, and so does an entry that the
  // recipe finds kept out by an unlisted holder (verdict::wait_change): a backend that lists
  // unlisted holders must notice (or poll for) their leaving here. The default waits on the
  // first entry of `seen` (or sleeps, if there is none) in slices of at most 250 ms, so a
  // change that pushes no wake-up is seen within a slice; a backend with
  // capabilities::values wakes on every change.
  virtual result<void> wait_change(std::string_view lock, const queue_view& seen,
                                   steady::time_point deadline, std::stop_token stop);

  // Sets the value of this session's entry `entry_id` of `lock` (at most max_value_size
  // bytes) and returns its new version (1 for the first value, one more per set). lock_lost
  // if the entry is gone or its session's lease ended; unsupported without
  // capabilities::values (the default).
  virtual result<std::uint64_t> set_value(std::string_view lock, std::string_view entry_id,
                                          std::string_view value) {
    (void)lock, (void)entry_id, (void)value;
    return fail(errc::unsupported, "this backend stores no values with its entries");
  }

  // wait(), and what the backend knows for certain about `awaited` as it returns: that it
  // left the queue (a ZooKeeper watch saw its node deleted: not a timeout or a spurious
  // wake-up), or that it left while at the head of the queue. Then the engine decides again
  // from its last view without the entries known to be gone -- `awaited`, and with
  // left_head every entry ahead of it as well -- instead of listing. Entries only ever join
  // behind (queue order is token order), so the entries ahead of the caller's can only leave
  // and the rest of the view still holds every entry that can be ahead of it; and an entry
  // leaving from ahead never turns "holds" into "waits", so a grant decided there is right.
  // `left` needs the caller's view to have held every entry ahead of `awaited` (a whole
  // listing does; an enqueue's partial view does not: say left_head or unknown there).
  // Default: unknown.
  virtual result<awaited_fate> wait_knowing(std::string_view lock, const entry& awaited,
                                            steady::time_point deadline, std::stop_token stop) {
    auto r = wait(lock, awaited, deadline, std::move(stop));
    if (!r) return fail(r.error());
    return awaited_fate::unknown;
  }

  // Renews the lease of the session and of every entry it owns. Returns the steady time at
  // which the renewal was sent. session_expired if the lease had already lapsed.
  virtual result<steady::time_point> keep_alive() = 0;

  // Backends with a native session (ZooKeeper) push state changes through this; the engine
  // installs it once, before any other call.
  virtual void set_event_handler(std::function<void(session_event)> handler) { (void)handler; }

  // After session_event::expired: the server's own words for why the session ended (say, a
  // PostgreSQL FATAL before it closed the connection), if it gave any; else empty. The loss
  // signal alone cannot tell an operator's kill from a server setting.
  virtual std::string end_reason() const { return {}; }

  // The session has expired: enqueue() and list() calls in flight may give up at once (their
  // answer no longer matters) instead of waiting out request_timeout, so a caller learns of
  // the end promptly. Removals and close() must keep working. Called once; must not block.
  virtual void on_expired() noexcept {}

  // Removes every entry of this session (best effort) and disconnects. Called once.
  virtual void close() noexcept = 0;

  // Names of locks with at least one entry, starting with `prefix`, sorted (status tools).
  virtual result<std::vector<std::string>> lock_names(std::string_view prefix) = 0;

  // Live checks of the configuration this session found (dlock::diagnose, `dlock doctor`):
  // what weakens a guarantee, each finding naming the guarantee it bears on. A check that
  // cannot be made (a command disabled, a view not readable) is check_status::unknown, never
  // a failure; only a server that stops answering is. What is unsafe for any lock is refused
  // at open instead. Default: no live checks (the capabilities say everything).
  virtual result<std::vector<check_finding>> diagnose() { return std::vector<check_finding>{}; }

  // Ends another client's session `session_id` as its lease's end would: its record and all its
  // entries go, so its holder's next renewal fails (it is told lost) and its waiters' lock is
  // granted on. For backends with capabilities::ends_other_sessions; others say unsupported.
  virtual result<void> end_session(std::string_view session_id) {
    (void)session_id;
    return fail(errc::unsupported, "this backend cannot end another client's session");
  }
};

}  // namespace dlock::detail
