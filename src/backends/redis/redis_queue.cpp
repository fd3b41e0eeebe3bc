// Enqueue, list and remove for redis:// and redlock://: one script call per server.
#include <hiredis/hiredis.h>

#include <algorithm>
#include <cstdio>

#include "backends/common/wire_time.hpp"
#include "backends/redis/redis_session.hpp"
#include "core/verdict.hpp"

namespace dlock::detail::redis {
namespace {

std::int64_t now_ms() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

// n copies of one request; the last takes argv itself (one server: no copy at all).
std::vector<request> same_request(std::size_t n, const lua_script* script,
                                  std::vector<std::string> argv) {
  std::vector<request> reqs(n);
  for (std::size_t i = 0; i + 1 < n; ++i) reqs[i] = request{script, argv};
  reqs[n - 1] = request{script, std::move(argv)};
  return reqs;
}

}  // namespace

std::string session::entry_id(std::string_view session_id, std::uint64_t n) const {
  if (!redlock()) return backend_session::entry_id(session_id, n);
  using namespace std::chrono;
  const auto us = duration_cast<microseconds>(system_clock::now().time_since_epoch()).count();
  char at[24];
  std::snprintf(at, sizeof at, "%014llx.",
                static_cast<unsigned long long>(std::max<long long>(us, 0)));
  return at + backend_session::entry_id(session_id, n);
}

std::vector<result<reply_ptr>> session::queue_calls(std::string_view lock,
                                                    std::optional<add_request> add,
                                                    std::int64_t created_ms) {
  // The stored entry text up to its grant: "kind|session|created|".
  auto head = add ? std::string(1, stored_kind(add->kind, add->id)) + '|' + info_.id + '|' +
                        std::to_string(created_ms) + '|'
                  : std::string();
  std::vector<std::string> argv{"8",
                                key('q', lock),
                                key('m', lock),
                                key('f', lock),
                                key('s', info_.id),
                                key('h', lock),
                                key('v', lock),
                                key('o', lock),
                                key('t', lock),
                                add ? std::string(add->id) : std::string(),
                                std::move(head),
                                info_.owner,
                                redlock() ? "1" : "0",
                                "0",
                                cfg_.prefix,
                                std::to_string(wake_ttl().count())};
  std::vector<request> reqs;
  {
    std::lock_guard lk(mu_);
    if (auto it = at_least_.find(lock); it != at_least_.end())
      argv[13] = std::to_string(it->second);  // at_least
    if (redlock()) {
      // Each own entry, with what may stay ahead of it on that server while it holds
      // (stamp_request, decided on the last listing); nothing if that server has not been
      // listed since it joined: then it is stamped once it is first.
      const auto mine = mine_.find(lock);
      const auto hints = stamps_.find(lock);
      static const id_set none;
      const id_set& own = mine != mine_.end() ? mine->second : none;
      for (std::size_t s = 0; s < nodes_.size(); ++s) {
        auto args = argv;
        for (const auto& id : own) {
          const std::vector<std::string>* ahead = nullptr;
          if (hints != stamps_.end() && s < hints->second.size()) {
            for (const auto& h : hints->second[s]) {
              if (h.id == id) ahead = &h.may_stay_ahead;
            }
          }
          args.push_back(id);
          args.push_back(std::to_string(ahead ? ahead->size() : 0));
          if (ahead) args.insert(args.end(), ahead->begin(), ahead->end());
        }
        reqs.push_back(request{&queue_script, std::move(args)});
      }
    }
  }
  if (reqs.empty()) reqs = same_request(nodes_.size(), &queue_script, std::move(argv));
  // An enqueue always writes (its token's INCR), so its WAIT covers an earlier attempt too.
  if (add && !redlock()) reqs[0] = synced(std::move(reqs[0]));
  return run_all(nodes_, reqs, {}, expired_.get_token());
}

session::round_replies session::call_round(std::string_view lock, std::optional<add_request> add) {
  round_replies out;
  out.sent = steady::now();
  const auto created_ms = now_ms();
  out.replies = queue_calls(lock, add, created_ms);
  // What a lone-holder reply leaves out: the client sent it.
  std::optional<node_entry> sent_entry;
  if (add) {
    sent_entry.emplace();
    sent_entry->e.id = std::string(add->id);
    sent_entry->e.kind = add->kind;
    sent_entry->e.owner = info_.owner;
    sent_entry->e.since = unix_ms_time(created_ms);
    sent_entry->session = info_.id;
  }
  out.views.resize(nodes_.size());
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    if (!out.replies[i]) continue;
    auto v = parse_queue_reply(nodes_[i]->where(), out.replies[i]->get(),
                               sent_entry ? &*sent_entry : nullptr, redlock());
    if (!v) {
      out.replies[i] = fail(v.error());
      continue;
    }
    if (!v->session_alive) {
      ++out.expired;
      continue;
    }
    out.counter = std::max(out.counter, v->counter);
    out.views[i] = std::move(*v);
    ++out.accepted;
  }
  return out;
}

result<queue_view> session::queue_round(std::string_view lock, std::optional<add_request> add,
                                        bool may_resubmit, bool whole) {
  if (auto r = check_open(); !r) return fail(r.error());
  if (!redlock()) {
    auto round = call_round(lock, add);
    if (!round.replies[0]) return fail(round.replies[0].error());
    if (!round.views[0]) {
      return fail(errc::session_expired,
                  cfg_.servers[0].where + ": session " + info_.id + " expired (its key is gone)");
    }
    queue_view out{{}, round.sent};
    for (auto& ne : round.views[0]->entries) out.entries.push_back(std::move(ne.e));
    if (add) {
      placed(lock, add->id, true);
      if (!round.views[0]->lone) {
        std::lock_guard lk(mu_);
        if (queued_.size() > 10000) queued_.clear();  // a hint; 'l' is always correct
        queued_.insert(std::string(add->id));
      }
    }
    return out;
  }
  // A round of this session on this lock sees either none or all of a re-queue by another
  // thread (its entries are removed, then enqueued again, under the exclusive lock): one
  // that ran in between would see an own entry gone everywhere, or held by no one, and
  // report it lost. The first look is shared; a re-queue looks again, alone.
  auto round = [&] {
    std::shared_lock rl(round_mutex(lock));
    return redlock_round(lock, add, whole);
  }();
  if (round && may_resubmit && !round->merged.resubmit.empty()) {
    std::unique_lock rl(round_mutex(lock));
    // Other threads may have re-queued them since, or their owners removed them.
    round = redlock_round(lock, std::nullopt);
    if (round && !round->merged.resubmit.empty()) {
      if (auto r = requeue(lock, *round); !r) return fail(r.error());
      round = redlock_round(lock, std::nullopt);
    }
  }
  if (round && round->merged.restamp && !whole) {
    // An own entry that became first since the last listing: this round's stamp requests
    // grant it, so the waiter does not wait for a change that already happened.
    {
      std::lock_guard lk(mu_);
      stamps_[std::string(lock)] = round->merged.stamps;
    }
    std::shared_lock rl(round_mutex(lock));
    round = redlock_round(lock, std::nullopt, whole);
  }
  if (!round) return fail(round.error());
  auto& merged = round->merged;
  repair_values(lock, merged);
  if (merged.term_fix) (void)record_term(lock, merged.term_fix->term, merged.term_fix->servers);
  // Two listings of one session may grant one entry at once, each with the token its own
  // round computed (the rounds saw different counters). The first to settle fixes it; the
  // other reports and records that one. Without this a candidate was told 36 while the later
  // listing recorded its term as 37, a term no leader held (CI, under load).
  std::unique_lock settling(settle_mutex(lock));
  {
    std::lock_guard lk(mu_);
    for (auto& g : merged.grants) {
      auto it = settled_.find(g.id);
      if (it == settled_.end() || it->second == g.token) continue;
      g.token = it->second;
      g.fresh = false;
      for (auto& e : merged.entries) {
        if (e.id == g.id) e.token = g.token;
      }
    }
  }
  if (auto r = settle_grants(lock, merged.grants); !r) return fail(r.error());
  {
    std::lock_guard lk(mu_);
    // The token is fixed from now on: later rounds report it as it is (removal forgets it).
    for (const auto& g : merged.grants) settled_.try_emplace(g.id, g.token);
    if (wait_hint_.size() > 10000) wait_hint_.clear();
    for (auto& [id, server] : merged.wait_node) wait_hint_[id] = server;
    if (stamps_.size() > 10000) stamps_.clear();  // hints; without one, first is stamped
    // A whole view decided nothing for own entries: it must not erase their stamp requests.
    if (!whole) stamps_[std::string(lock)] = std::move(merged.stamps);
  }
  return queue_view{std::move(merged.entries), round->sent, std::move(merged.unlisted)};
}

std::vector<std::string> session::release_argv(const std::vector<own_entry>& entries,
                                               bool drop_session) const {
  // Not dropping the session: how long a tombstone lasts (ms). A late enqueue is one a link
  // delivered after the client gave up on it: ten leases, and at least five minutes, outlast
  // a closed connection's retransmissions.
  const auto tombstone =
      std::max(info_.ttl * 10, std::chrono::milliseconds{std::chrono::minutes{5}});
  std::vector<std::string> keys, args{cfg_.prefix, std::to_string(wake_ttl().count()), info_.id,
                                      drop_session ? "1" : std::to_string(tombstone.count())};
  for (const auto& e : entries) {
    keys.push_back(key('q', e.lock));
    keys.push_back(key('m', e.lock));
    keys.push_back(key('h', e.lock));
    keys.push_back(key('v', e.lock));
    keys.push_back(key('o', e.lock));
    args.push_back(e.id);
    args.push_back(std::string(e.queued ? "q" : "l") + (e.tombstone ? "g" : ""));
  }
  keys.push_back(key('s', info_.id));  // always: the script checks the session lives
  std::vector<std::string> argv{std::to_string(keys.size())};
  argv.insert(argv.end(), keys.begin(), keys.end());
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

std::vector<result<reply_ptr>> session::release_calls(const std::vector<own_entry>& entries,
                                                      bool drop_session, until_t until,
                                                      std::stop_token stop) {
  return run_all(nodes_,
                 same_request(nodes_.size(), &release_script, release_argv(entries, drop_session)),
                 until, std::move(stop));
}

result<void> session::remove_everywhere(std::string_view lock, std::string_view id, until_t until,
                                        bool for_good) {
  // Entries of a session whose lease ended are dead to every other client: not ours any more,
  // and not worth a request (nor a wait on a dead link; on_expired breaks off one in flight).
  // session_expired, not lock_lost: the lease ended here, nothing was confirmed by a server
  // (a retried removal stopped so is an unconfirmed release, removal_queue).
  if (expired_.stop_requested()) {
    return fail(errc::session_expired, cfg_.servers[0].where + ": entry " + std::string(id) +
                                           " of '" + std::string(lock) +
                                           "' is dead (the session expired)");
  }
  bool queued = false;
  bool tombstone = false;
  placed(lock, id, false);
  {
    std::lock_guard lk(mu_);
    releasing_.insert(std::string(id));
    if (auto it = queued_.find(id); it != queued_.end()) {
      queued_.erase(it);
      queued = true;
    }
    tombstone = for_good && uncertain_.contains(id);
  }
  std::vector<result<reply_ptr>> replies;
  bool ended_by_operator = false;
  // A candidate's removal also drops its value and wakes observers: release_script only.
  if (!queued && !tombstone && !redlock() && stored_kind(entry_kind::exclusive, id) != 'e') {
    // Most likely a lone holder: the one-key release (as cheap as the minimal
    // compare-and-delete). The full script only if a contender has moved the entry into the
    // queue meanwhile, or it is in neither place.
    auto r = nodes_[0]->run(
        {&release_lone_script, {"2", key('h', lock), key('s', info_.id), std::string(id)}},
        expired_.get_token(), until);
    if (r && (*r)->type == REDIS_REPLY_INTEGER && (*r)->integer == 2) {
      ended_by_operator = true;
    } else if (!r || ((*r)->type == REDIS_REPLY_INTEGER && (*r)->integer == 1)) {
      replies.push_back(std::move(r));
    }
  }
  if (replies.empty() && !ended_by_operator)
    replies = release_calls({{std::string(lock), std::string(id), queued, tombstone}}, false, until,
                            expired_.get_token());
  std::size_t ok = std::ranges::count_if(replies, [](const auto& r) { return r.has_value(); });
  if (redlock() && ok < nodes_.size()) retry_missed(lock, id, replies, tombstone);
  std::lock_guard lk(mu_);
  if (ok > 0) uncertain_.erase(std::string(id));
  releasing_.erase(std::string(id));
  settled_.erase(std::string(id));
  values_.erase(std::string(id));
  pending_terms_.erase(std::string(id));
  auto it = mine_.find(lock);
  if (it != mine_.end()) {
    it->second.erase(std::string(id));
    if (it->second.empty()) {
      mine_.erase(it);
      stamps_.erase(std::string(lock));
    }
  }
  if (ended_by_operator) {
    return fail(errc::lock_lost, "redis entry " + std::string(id) +
                                     " was removed, but its session had been ended (by an "
                                     "operator's force_unlock) before this release");
  }
  // Only tidiness on one server: close() deletes the session key, after which any script
  // purges the entry. On Redlock an entry left on a minority would stay there for the whole
  // session and, with a second master missed, block every other client: retried.
  if (!redlock() && ok < nodes_.size() && leftover_.size() < 1000)
    leftover_[std::string(lock)].insert(std::string(id));
  if (!redlock() && !replies[0]) return fail(replies[0].error());
  if (ok < quorum()) return fail(quorum_failure("remove", replies, 0));
  // No server that answered had it (neither as lone holder nor queued): purged with a dead
  // session, or deleted by an operator.
  bool found = std::ranges::any_of(replies, [](const auto& r) {
    return r && (*r)->type == REDIS_REPLY_INTEGER && (*r)->integer > 0;
  });
  if (!found) return fail(errc::lock_lost, "redis entry " + std::string(id) + " is gone");
  return {};
}

result<queue_view> session::enqueue(std::string_view lock, entry_kind kind,
                                    std::string_view entry_id) {
  if (auto r = check_open(); !r) return fail(r.error());
  {
    // Recorded before sending: if the reply is lost, close() still removes the entry.
    std::unique_lock lk(mu_);
    // The engine retries an enqueue with the same id after a failure, whose partial entries
    // may be queued for removal: that removal must not catch the new attempt's entry.
    if (redlock()) cancel_retry(lk, entry_id);
    mine_[std::string(lock)].insert(std::string(entry_id));
  }
  auto v = queue_round(lock, add_request{entry_id, kind}, true);
  if (!v) {
    std::lock_guard lk(mu_);
    uncertain_.insert(std::string(entry_id));
  }
  return v;
}

// Status tools and election observers read every entry; Redlock's view for the engine's
// waiters shows only what their verdicts need (this session's entries and their blockers).
result<queue_view> session::list(std::string_view lock) {
  return queue_round(lock, std::nullopt, false, true);
}

result<queue_view> session::list_for_waiter(std::string_view lock, std::string_view entry_id) {
  (void)entry_id;
  return queue_round(lock, std::nullopt, true);
}

result<void> session::remove(std::string_view lock, std::string_view entry_id) {
  if (auto r = check_open(); !r) return r;
  // Not in the middle of a re-queue by another thread (round_mutex): it would put it back.
  std::shared_lock<std::shared_mutex> rl;
  if (redlock()) rl = std::shared_lock(round_mutex(lock));
  return remove_everywhere(lock, entry_id, {}, true);
}

// A server that has not answered by `deadline` counts as failed, as if its socket timeout
// had passed: its connection is closed (node::run), one server's removal is retried by the
// engine, and Redlock retries the servers it missed itself (retry_missed).
result<void> session::remove_until(std::string_view lock, std::string_view entry_id,
                                   steady::time_point deadline) {
  if (auto r = check_open(); !r) return r;
  std::shared_lock<std::shared_mutex> rl;
  if (redlock()) rl = std::shared_lock(round_mutex(lock));
  return remove_everywhere(lock, entry_id, deadline, true);
}

}  // namespace dlock::detail::redis
