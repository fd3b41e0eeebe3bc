// Redlock's rounds (redlock://): one queue round on every master merged into one view
// (redis_merge.hpp), a split's losers re-queued at the back, and grants' tokens settled on
// a majority before they are reported.
#include <hiredis/hiredis.h>

#include <algorithm>
#include <random>
#include <thread>

#include "backends/redis/redis_session.hpp"

namespace dlock::detail::redis {

result<session::redlock_view> session::redlock_round(std::string_view lock,
                                                     std::optional<add_request> add, bool whole) {
  {
    // Counted when sent, not when answered: under load a round takes seconds to come back,
    // and every waiter whose safety net fired meanwhile would send its own. If this one then
    // misses a master, those nets fire once more before anyone lists again.
    std::lock_guard lk(mu_);
    if (round_sent_.size() > 10000) round_sent_.clear();  // a cache: without it, waiters list
    round_sent_[std::string(lock)] = steady::now();
  }
  auto round = call_round(lock, add);
  // A majority must have answered well within the lease.
  auto drift = info_.ttl / 100 + std::chrono::milliseconds{2};
  bool in_time = steady::now() - round.sent < info_.ttl - drift;
  if (round.accepted < quorum() || !in_time) {
    if (add) (void)remove_everywhere(lock, add->id);  // partial grants go, by entry id
    if (!in_time && round.accepted >= quorum()) {
      return fail(errc::backend_unavailable, "redlock enqueue took longer than the lease");
    }
    return fail(quorum_failure(add ? "enqueue" : "list", round.replies, round.expired));
  }
  id_set mine;
  std::map<std::string, std::uint64_t, std::less<>> settled;
  {
    std::lock_guard lk(mu_);
    auto& best = at_least_[std::string(lock)];
    best = std::max(best, round.counter);
    if (at_least_.size() > 10000) at_least_.clear();  // a cache; correctness does not need it
    if (auto it = mine_.find(lock); it != mine_.end()) mine = it->second;
    for (const auto& id : mine) {
      if (auto it = settled_.find(id); it != settled_.end()) settled.insert(*it);
    }
    // A whole view (status, observers) decides nothing for own entries; it still shows own
    // holders with the fencing tokens they were granted.
    if (whole) mine.clear();
  }
  redlock_view out{merge_views(round.views, mine, quorum(), settled), round.sent, {}};
  for (const auto& id : out.merged.resubmit) {
    auto& kind = out.kinds[id];
    for (const auto& v : round.views) {
      if (!v) continue;
      for (const auto& ne : v->entries) {
        if (ne.e.id == id) kind = ne.e.kind;
      }
    }
  }
  return out;
}

result<void> session::requeue(std::string_view lock, const redlock_view& round) {
  // Re-queue at the back everywhere, after a random pause so that the losers of a split do
  // not collide again. A candidate's value goes with its removal: set again once it is back,
  // under a version above the ones it had.
  thread_local std::minstd_rand rng{std::random_device{}()};
  const auto& ids = round.merged.resubmit;
  std::map<std::string, own_value> values;
  {
    std::lock_guard lk(mu_);
    for (const auto& id : ids) {
      if (auto it = values_.find(id); it != values_.end()) values[id] = it->second;
    }
  }
  for (const auto& id : ids) {
    // Gone from every master that answered (lock_lost) is as good as removed here.
    if (auto r = remove_everywhere(lock, id); !r && r.error().code != errc::lock_lost)
      return fail(r.error());
    std::unique_lock lk(mu_);
    cancel_retry(lk, id);  // a late retry must not remove the re-queued entry
    mine_[std::string(lock)].insert(id);
    if (auto v = values.find(id); v != values.end()) values_[id] = v->second;
  }
  std::this_thread::sleep_for(
      std::chrono::milliseconds{std::uniform_int_distribution<int>(0, 20)(rng)});
  std::optional<failure> value_failure;
  for (const auto& id : ids) {
    auto kind = round.kinds.find(id);
    if (auto r = redlock_round(
            lock,
            add_request{id, kind != round.kinds.end() ? kind->second : entry_kind::exclusive});
        !r) {
      return fail(r.error());
    }
    // A value not set again is not fatal to the others' re-queueing: every entry goes back
    // first, and the failure is reported after.
    if (auto v = values.find(id); v != values.end()) {
      if (auto r = set_value_quorum(lock, id, v->second.value); !r && !value_failure)
        value_failure = r.error();
    }
  }
  // The removal above left a wake token for each id (w:<id>), meant for the waiters that
  // were blocked on it then. The id is queued again, so the token would now tell every
  // later waiter on it, at once and again until it expires, that it left: a hot loop of
  // wake-ups and listings. Best effort; a token left behind only costs that loop until
  // its TTL.
  std::vector<std::string> del{"DEL"};
  for (const auto& id : ids) del.push_back(key('w', id));
  (void)run_all(nodes_, std::vector<request>(nodes_.size(), request{nullptr, del}));
  if (value_failure) return fail(*value_failure);
  return {};
}

std::shared_mutex& session::round_mutex(std::string_view lock) {
  return round_mu_[std::hash<std::string_view>{}(lock) % round_mu_.size()];
}

result<void> session::settle_grants(std::string_view lock, const std::vector<grant_check>& grants) {
  for (const auto& g : grants) {
    if (g.fresh && g.id.ends_with("~e") && !defer_term(g)) {
      // The term script raises the counters too.
      if (auto r = record_term(lock, g); !r) return r;
      continue;
    }
    // Every answering master that lags is raised, though only `needed` must confirm.
    if (g.raise_on.empty()) continue;
    std::vector<node*> targets;
    std::vector<request> reqs;
    for (auto s : g.raise_on) {
      targets.push_back(nodes_[s]);
      reqs.push_back({&raise_script,
                      {"2", key('f', lock), cfg_.prefix + "fence-floor", std::to_string(g.token)}});
    }
    auto replies = run_all(targets, reqs, {}, expired_.get_token());
    std::size_t ok = std::ranges::count_if(replies, [](const auto& r) { return r.has_value(); });
    if (ok < g.needed) return fail(quorum_failure("fencing counter update", replies, 0));
  }
  return {};
}

bool session::defer_term(const grant_check& g) {
  // Granted in its enqueue's round (a campaign with no one ahead): the first value, which the
  // engine sets next, records the term along (set_value_quorum).
  std::lock_guard lk(mu_);
  if (values_.contains(g.id)) return false;
  if (pending_terms_.size() > 10000) pending_terms_.clear();  // a cache of abandoned ones
  pending_terms_[g.id] = g.token;
  return true;
}

// An election's new leader: its term recorded on a majority before the grant is reported, so
// observers report the leader with its fencing token as its term's (merge_views), never a
// place two leaders of one burst share. The same request raises the counters (settle_grants).
result<void> session::record_term(std::string_view lock, const grant_check& g,
                                  const std::vector<std::size_t>& servers) {
  const std::vector<std::string> argv{"6",
                                      key('f', lock),
                                      cfg_.prefix + "fence-floor",
                                      key('t', lock),
                                      key('m', lock),
                                      key('h', lock),
                                      key('o', lock),
                                      std::to_string(g.token),
                                      g.id,
                                      std::to_string(wake_ttl().count())};
  std::vector<node*> targets;
  for (auto s : servers) targets.push_back(nodes_[s]);
  if (servers.empty()) targets = nodes_;
  auto replies = run_all(targets, std::vector<request>(targets.size(), request{&term_script, argv}),
                         {}, expired_.get_token());
  if (!servers.empty()) return {};
  std::size_t ok = 0;
  for (const auto& r : replies) {
    if (r && (*r)->type == REDIS_REPLY_INTEGER && (*r)->integer == 1) ++ok;
  }
  if (ok >= quorum()) return {};
  if (std::ranges::any_of(replies, [](const auto& r) { return !r.has_value(); }))
    return fail(quorum_failure("term record", replies, 0));
  // Gone, or a later term recorded: not a leader to report. The next listing decides again.
  return fail(errc::backend_unavailable, "redlock: the term of " + g.id + " in election '" +
                                             std::string(lock) + "' was recorded on only " +
                                             std::to_string(ok) + " of " +
                                             std::to_string(nodes_.size()) + " masters");
}

}  // namespace dlock::detail::redis
