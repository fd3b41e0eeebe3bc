#pragma once
// The backend_session over one Redis server or N Redlock masters (see redis_backend.hpp).
// One uncontended acquire is one queue_script call and one release one release_script call;
// with N masters both go to every master at once (run_all) and need a majority.

#include <array>
#include <atomic>
#include <condition_variable>
#include <map>
#include <mutex>
#include <set>
#include <shared_mutex>
#include <thread>

#include "backends/redis/redis_config.hpp"
#include "backends/redis/redis_merge.hpp"
#include "backends/redis/redis_node.hpp"
#include "core/backend.hpp"

namespace dlock::detail::redis {

class session final : public backend_session {
 public:
  session(config cfg, session_info info);
  // Creates the session key on every server (a majority for Redlock).
  result<void> start();

  capabilities caps() const noexcept override {
    // Semaphores cannot be made safe over majorities (no_majority_permits); elections can
    // (values confirmed by a majority, read with write-back: redis_values.cpp).
    return {.scope = reach::network,
            .push_wakeups = true,
            .bounded_remove = true,
            .ends_other_sessions = true,
            .permits = !redlock(),
            .values = true,
            .waiter_tokens = !redlock(),
            .no_permits_because = redlock() ? no_majority_permits : std::string_view{}};
  }
  // Redlock: the masters order the entries that join between two grants by id (the queue
  // script's epoch()), so a Redlock id begins with the time it was made, in fixed-width hex:
  // they stay in arrival order, as far as the clients' clocks agree. One server: the default.
  std::string entry_id(std::string_view session_id, std::uint64_t n) const override;
  // Why Redlock refuses semaphores (the refusal and `dlock doctor` quote it).
  static constexpr std::string_view no_majority_permits =
      "a permit held on a majority of masters does not bound the holders when N > 1: each "
      "master orders the permit entries its own way, so with N = 2 three masters can each "
      "admit a different two of three entries, every entry then holds on 2 of 3 masters, and "
      "three hold at once";
  result<queue_view> enqueue(std::string_view lock, entry_kind kind,
                             std::string_view entry_id) override;
  result<queue_view> list(std::string_view lock) override;
  result<queue_view> list_for_waiter(std::string_view lock, std::string_view entry_id) override;
  result<void> remove(std::string_view lock, std::string_view entry_id) override;
  result<void> end_session(std::string_view session_id) override;
  result<void> remove_until(std::string_view lock, std::string_view entry_id,
                            steady::time_point deadline) override;
  result<void> wait(std::string_view lock, const entry& awaited, steady::time_point deadline,
                    std::stop_token stop) override;
  result<awaited_fate> wait_knowing(std::string_view lock, const entry& awaited,
                                    steady::time_point deadline, std::stop_token stop) override;
  result<void> wait_any(std::string_view lock, std::span<const entry> awaited,
                        steady::time_point deadline, std::stop_token stop) override;
  result<void> wait_change(std::string_view lock, const queue_view& seen,
                           steady::time_point deadline, std::stop_token stop) override;
  result<std::uint64_t> set_value(std::string_view lock, std::string_view entry_id,
                                  std::string_view value) override;
  result<steady::time_point> keep_alive() override;
  void close() noexcept override;
  result<std::vector<std::string>> lock_names(std::string_view prefix) override;
  void on_expired() noexcept override { expired_.request_stop(); }
  result<std::vector<check_finding>> diagnose() override;

 private:
  using id_set = std::set<std::string, std::less<>>;
  struct add_request {
    std::string_view id;
    entry_kind kind;
  };

  std::string key(char type, std::string_view name) const;
  // `r`, counted only once ?replicas=N replicas acknowledged it (node.hpp: request).
  request synced(request r) const {
    r.replicas = cfg_.replicas;
    r.replica_timeout = cfg_.replica_timeout;
    return r;
  }
  // One master only, at each renewal: checks that every entry this session placed is still
  // stored there; session_expired naming the first missing one if not (deleted by another
  // client, or, with redis-sentinel://, a failover to a replica that had not received it: the
  // hold is lost, and must be said to be). One script call, only while there are entries.
  result<void> check_own_entries();
  // Redlock, at each renewal: every entry this session holds is still on a majority of
  // masters. A master down or frozen past the lease comes back without the session's key and
  // purges its entries, and the renewal restores the key, not the entries: after two such
  // masters in turn a leader's entry was on one master of three, another was granted, and the
  // old leader, its session renewed on a majority, went on leading (a tester's). session_expired
  // if not; one script call per master, only while the session holds.
  result<void> check_held_majority();
  // Records or forgets an own entry that enqueue placed (what check_own_entries looks for).
  void placed(std::string_view lock, std::string_view id, bool add);
  std::size_t quorum() const noexcept { return nodes_.size() / 2 + 1; }
  bool redlock() const noexcept { return nodes_.size() > 1; }
  // Records this session's scheme under the prefix, or refuses the other one's (start()).
  result<void> claim_scheme();
  std::chrono::milliseconds wake_ttl() const;

  // One queue_script call on every server, turned into the engine's view. Redlock: the view
  // of this session's entries (holders, and each waiter behind the entry it waits on), or,
  // `whole`, every entry for status tools and observers (merge_views without own entries).
  result<queue_view> queue_round(std::string_view lock, std::optional<add_request> add,
                                 bool may_resubmit, bool whole = false);
  // Every server's reply to one queue_script call, parsed.
  struct round_replies {
    std::vector<result<reply_ptr>> replies;
    std::vector<std::optional<node_view>> views;  // nullopt: failed, or our session is gone
    std::size_t accepted{0}, expired{0};
    std::uint64_t counter{0};  // the highest fencing counter of any answering server
    steady::time_point sent;
  };
  round_replies call_round(std::string_view lock, std::optional<add_request> add);
  // Redlock: one round merged (redis_merge.hpp), and the kind of each entry to re-queue.
  struct redlock_view {
    merge_result merged;
    steady::time_point sent;
    std::map<std::string, entry_kind, std::less<>> kinds;
  };
  result<redlock_view> redlock_round(std::string_view lock, std::optional<add_request> add,
                                     bool whole = false);
  // Redlock: removes the round's `resubmit` entries and enqueues them again at the back
  // (values set again). Called with round_mutex(lock) held exclusively.
  result<void> requeue(std::string_view lock, const redlock_view& round);
  // Redlock: shared by rounds, removals and value writes of one lock; exclusive for a
  // re-queue (striped: locks may share one).
  std::shared_mutex& round_mutex(std::string_view lock);
  std::vector<result<reply_ptr>> queue_calls(std::string_view lock, std::optional<add_request> add,
                                             std::int64_t created_ms);
  result<void> settle_grants(std::string_view lock, const std::vector<grant_check>& grants);
  // Redlock elections: a new leader's term recorded on a majority (term_script).
  // With `servers`, only on those (a reader's write-back: best effort).
  result<void> record_term(std::string_view lock, const grant_check& g,
                           const std::vector<std::size_t>& servers = {});
  // Redlock elections: true if the new leader's term goes with its first value instead.
  bool defer_term(const grant_check& g);
  // Redlock: set_value under a version this session chose (the entry's next), confirmed by
  // a majority (redis_values.cpp).
  result<std::uint64_t> set_value_quorum(std::string_view lock, std::string_view entry_id,
                                         std::string_view value);
  std::vector<std::string> set_value_at_argv(std::string_view lock, std::string_view id,
                                             std::string_view value, std::uint64_t version,
                                             std::string_view sid, std::uint64_t term = 0) const;
  // Redlock: writes back the values of `m`'s repairs, or reports their fallbacks
  // (merge_result::repairs).
  void repair_values(std::string_view lock, merge_result& m);
  // Redlock: waits for a push to `inbox` from any of `servers` until `until`; true if one came.
  result<bool> pop_any(const std::string& inbox, const std::vector<std::size_t>& servers,
                       steady::time_point until, std::stop_token stop);
  struct own_entry {
    std::string lock, id;
    bool queued{false};  // known to be in the queue, not a lone holder (skips one read)
    // Removed for good (the engine's removal, not a Redlock re-queue) after an enqueue of it
    // failed: a tombstone keeps that enqueue, if a slow link delivers it late, from adding it
    // again (it would be held for nobody while the session lives).
    bool tombstone{false};
  };
  // release_script's argv for the given entries.
  std::vector<std::string> release_argv(const std::vector<own_entry>& entries,
                                        bool drop_session) const;
  // release_script with the given entries on every server; the replies per server.
  std::vector<result<reply_ptr>> release_calls(const std::vector<own_entry>& entries,
                                               bool drop_session, until_t until = {},
                                               std::stop_token stop = {});
  // Redlock: the removal of `id` failed on the servers whose reply is a failure; it is
  // retried there in the background until it succeeds or the session closes.
  void retry_missed(std::string_view lock, std::string_view id,
                    const std::vector<result<reply_ptr>>& replies, bool tombstone);
  // Drops pending retries of `id` (it is being enqueued again) and waits out one in flight.
  // Called with mu_ held.
  void cancel_retry(std::unique_lock<std::mutex>& lk, std::string_view id);
  void retry_loop(std::stop_token stop);
  // Every server's answer is awaited until `until` at most (then it counts as a failure).
  result<void> remove_everywhere(std::string_view lock, std::string_view id, until_t until = {},
                                 bool for_good = false);
  // Majority bookkeeping for Redlock: the failure to report when fewer than a quorum agreed.
  failure quorum_failure(std::string_view what, const std::vector<result<reply_ptr>>& replies,
                         std::size_t expired) const;
  result<void> check_open() const;
  // wait(); the wake token popped (pushed only by the awaited entry's removal), if any.
  result<std::optional<std::string>> wait_for_token(std::string_view lock, const entry& awaited,
                                                    steady::time_point deadline,
                                                    std::stop_token stop);
  // Redlock: when this session last sent a round of `lock` (the epoch if never): once it is
  // answered, every entry dead by then is purged, and its waiters' tokens pushed.
  steady::time_point last_round_sent(std::string_view lock) const;

  // A fresh inbox key for one registered wait (i:<session>:<n>): stale tokens of an earlier
  // registration never wake a later wait.
  std::string next_inbox();

  config cfg_;
  std::atomic<std::uint64_t> inboxes_{0};
  session_info info_;
  std::vector<std::unique_ptr<node>> owned_;
  std::vector<node*> nodes_;
  std::atomic<bool> closed_{false};

  mutable std::mutex mu_;
  std::map<std::string, id_set, std::less<>> mine_;      // lock -> own entry ids
  std::map<std::string, id_set, std::less<>> leftover_;  // removed on too few servers
  // Ids an enqueue of which failed (its reply lost: it may still arrive, late): removed for
  // good with a tombstone (own_entry::tombstone).
  id_set uncertain_;
  std::map<std::string, std::uint64_t, std::less<>> at_least_;  // lock -> highest counter seen
  std::map<std::string, std::size_t, std::less<>> wait_hint_;   // awaited id -> server
  std::map<std::string, steady::time_point, std::less<>> round_sent_;  // last_round_sent
  // Redlock: own holders' tokens, fixed once their counters were raised (see merge_views).
  std::map<std::string, std::uint64_t, std::less<>> settled_;
  // Own entries whose removal has begun: the masters may show them gone before mine_ does,
  // and check_held_majority must not take that for a purge.
  id_set releasing_;
  // Redlock: own candidates' values and the last version this session chose for each.
  struct own_value {
    std::string value;
    std::uint64_t version{0};
  };
  std::map<std::string, own_value, std::less<>> values_;
  // Redlock: own candidates granted before their first value was set: the term (token) that
  // value's write records along (set_value_quorum), saving a round per uncontended campaign.
  std::map<std::string, std::uint64_t, std::less<>> pending_terms_;
  std::array<std::shared_mutex, 16> round_mu_;  // round_mutex
  // Held from a listing's grants to their settling (list): one settles an entry's token.
  std::array<std::mutex, 16> settle_mu_;
  std::mutex& settle_mutex(std::string_view lock) {
    return settle_mu_[std::hash<std::string_view>{}(lock) % settle_mu_.size()];
  }
  // Redlock: lock -> per server, the own entries to stamp a grant on (merge_result::stamps).
  std::map<std::string, std::vector<std::vector<stamp_request>>, std::less<>> stamps_;
  // One server: own entries that enqueue put in the queue (not in the lone-holder key).
  id_set queued_;
  // Redlock: per server, removals that missed it (retried by retrier_), and the ids of a
  // retry in flight.
  std::vector<std::vector<own_entry>> missed_;
  id_set retrying_;
  std::condition_variable_any retry_cv_;
  // Breaks off enqueue and list calls in flight once the session has expired (removals and
  // close go on without it).
  std::stop_source expired_;
  // Own entries enqueue placed (lock -> ids; one master only), and, for redis-sentinel://,
  // the master epoch (node::epoch) whose master was last checked to hold them.
  std::map<std::string, id_set, std::less<>> placed_;
  std::atomic<std::uint64_t> verified_epoch_{0};
  std::jthread retrier_;  // last: stopped and joined before the nodes go
};

}  // namespace dlock::detail::redis
