// Session lifetime, renewal, waiting and listing for redis:// and redlock:// (the queue
// operations are in redis_queue.cpp).
#include "backends/redis/redis_backend.hpp"

#include <hiredis/hiredis.h>

#include <algorithm>

#include "backends/redis/redis_doctor.hpp"
#include "backends/redis/redis_session.hpp"

namespace dlock::detail {
namespace {

// SCAN MATCH treats these as glob syntax; a prefix or name may contain them literally.
std::string glob_escape(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '*' || c == '?' || c == '[' || c == ']' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

}  // namespace

namespace redis {

session::session(config cfg, session_info info) : cfg_(std::move(cfg)), info_(std::move(info)) {
  for (auto t : cfg_.servers) {
    // Redlock waits for each master at most a quarter of the TTL (the algorithm's per-master
    // timeout, small against the lease): the majority's answers are what count. Waiting for
    // the request timeout, a frozen master (SIGSTOP, a stalled disk) held every round past
    // short leases the others had just renewed or granted: one frozen master of three ended
    // sessions and failed every acquire. A socket timeout, not a deadline per call: a reply
    // read with a poll() first cost the uncontended cycle 16%.
    if (cfg_.servers.size() > 1)
      t.timeout = std::min(t.timeout, std::max(info_.ttl / 4, std::chrono::milliseconds{1}));
    owned_.push_back(std::make_unique<node>(t));
    nodes_.push_back(owned_.back().get());
  }
  if (!cfg_.sentinels.empty()) owned_[0]->use_sentinels(cfg_.sentinels, cfg_.master_name);
}

std::string session::key(char type, std::string_view name) const {
  std::string k = cfg_.prefix;
  k += type;
  k += ':';
  k += name;
  return k;
}

std::chrono::milliseconds session::wake_ttl() const {
  return std::max(info_.ttl, std::chrono::milliseconds{1000});
}

result<void> session::check_open() const {
  if (closed_) return fail(errc::session_closed, "redis session " + info_.id + " is closed");
  return {};
}

failure session::quorum_failure(std::string_view what,
                                const std::vector<result<reply_ptr>>& replies,
                                std::size_t expired) const {
  if (expired > nodes_.size() - quorum()) {
    return {make_error_code(errc::session_expired), "redlock session " + info_.id + " expired on " +
                                                        std::to_string(expired) + " of " +
                                                        std::to_string(nodes_.size()) + " servers"};
  }
  std::string detail;
  std::optional<errc> final_code;
  for (const auto& r : replies) {
    if (r) continue;
    detail += (detail.empty() ? "" : "; ") + r.error().message;
    if (!final_code && !is_transient(r.error()))
      final_code = static_cast<errc>(r.error().code.value());
  }
  auto code = final_code.value_or(errc::backend_unavailable);
  return {make_error_code(code), "redlock " + std::string(what) + ": fewer than " +
                                     std::to_string(quorum()) + " of " +
                                     std::to_string(nodes_.size()) + " servers agreed" +
                                     (detail.empty() ? "" : " (" + detail + ")")};
}

result<void> session::start() {
  // What is unsafe for any lock (an eviction policy, a replica, Redis Cluster) is refused
  // here (redis_doctor.cpp). INFO's default sections hold all three.
  std::vector<request> info(nodes_.size(), request{nullptr, {"INFO"}});
  auto infos = run_all(nodes_, info);
  for (std::size_t i = 0; i < infos.size(); ++i) {
    if (auto r = refuse_unsafe(info_text(infos[i]), cfg_.servers[i].where); !r) return r;
  }
  // Too few answered to ever agree: the steps after this would each wait for the silent ones
  // again.
  if (redlock() && std::ranges::count_if(infos, [](const auto& r) { return r.has_value(); }) <
                       static_cast<std::ptrdiff_t>(quorum())) {
    return fail(quorum_failure("open", infos, 0));
  }
  if (auto r = claim_scheme(); !r) return r;
  // An observer (dlock doctor) writes nothing a failover must keep: it opens even when too few
  // replicas are connected, and can say so.
  request set{nullptr,
              {"SET", key('s', info_.id), info_.owner, "PX", std::to_string(info_.ttl.count())}};
  std::vector<request> reqs(nodes_.size(), info_.observe_only ? set : synced(set));
  auto replies = run_all(nodes_, reqs);
  std::size_t ok = std::ranges::count_if(replies, [](const auto& r) { return r.has_value(); });
  if (!redlock() && !replies[0]) return fail(replies[0].error());
  if (ok >= quorum()) return {};
  std::vector<request> undo(nodes_.size(), request{nullptr, {"DEL", key('s', info_.id)}});
  (void)run_all(nodes_, undo);
  return fail(quorum_failure("open", replies, 0));
}

result<steady::time_point> session::keep_alive() {
  if (auto r = check_open(); !r) return fail(r.error());
  auto sent = steady::now();
  // PEXPIRE never creates a key: a lapsed session stays lapsed.
  // With ?replicas=N a renewal that too few replicas acknowledged fails like one the server
  // never answered: a failover to a replica must not find the lease shorter than we count it.
  request renew{nullptr, {"PEXPIRE", key('s', info_.id), std::to_string(info_.ttl.count())}};
  std::vector<request> reqs(nodes_.size(), info_.observe_only ? renew : synced(renew));
  // A lease already over here (on_expired) is not renewed, nor waited for on a dead link.
  auto replies = run_all(nodes_, reqs, {}, expired_.get_token());
  if (expired_.stop_requested()) {
    return fail(errc::session_expired,
                cfg_.servers[0].where + ": session " + info_.id + " expired (its lease ran out)");
  }
  std::size_t renewed = 0, gone = 0;
  for (const auto& r : replies) {
    if (!r) continue;
    ((*r)->type == REDIS_REPLY_INTEGER && (*r)->integer == 1 ? renewed : gone) += 1;
  }
  if (!redlock()) {
    if (!replies[0]) return fail(replies[0].error());
    if (gone)
      return fail(errc::session_expired,
                  cfg_.servers[0].where + ": session " + info_.id + " expired (its key is gone)");
    if (auto f = entries_check_verdict(check_own_entries()); !f) return fail(f.error());
    return sent;
  }
  if (renewed < quorum()) return fail(quorum_failure("keep-alive", replies, gone));
  if (auto f = entries_check_verdict(check_held_majority()); !f) return fail(f.error());
  if (gone > 0) {
    // A master that lost the key (down past the TTL, restarted empty) while a majority kept
    // it: the session is alive, as every other client saw it on that majority, so its key goes
    // back there. Else a later outage of another master would leave it on too few and end a
    // live session. Its entries that master purged stay gone; NX never overwrites.
    std::vector<node*> lapsed;
    for (std::size_t s = 0; s < nodes_.size(); ++s) {
      if (replies[s] && (*replies[s])->type == REDIS_REPLY_INTEGER && (*replies[s])->integer == 0)
        lapsed.push_back(nodes_[s]);
    }
    request restore{
        nullptr,
        {"SET", key('s', info_.id), info_.owner, "PX", std::to_string(info_.ttl.count()), "NX"}};
    (void)run_all(lapsed, std::vector<request>(lapsed.size(), restore), {}, expired_.get_token());
    // And the scheme's record (redis_scheme.cpp), which a master that came back empty lacks.
    if (!info_.observe_only) {
      request scheme{nullptr, {"SET", cfg_.prefix + "scheme", "redlock", "NX"}};
      (void)run_all(lapsed, std::vector<request>(lapsed.size(), scheme), {}, expired_.get_token());
    }
  }
  return sent;
}

result<void> session::wait(std::string_view lock, const entry& awaited, steady::time_point deadline,
                           std::stop_token stop) {
  if (awaited.kind == entry_kind::permit) return wait_any(lock, {&awaited, 1}, deadline, stop);
  auto r = wait_for_token(lock, awaited, deadline, std::move(stop));
  if (!r) return fail(r.error());
  return {};
}

result<awaited_fate> session::wait_knowing(std::string_view lock, const entry& awaited,
                                           steady::time_point deadline, std::stop_token stop) {
  if (awaited.kind == entry_kind::permit) {
    // A semaphore of one permit: its waiters register like any permit's (wait_any).
    auto r = wait_any(lock, {&awaited, 1}, deadline, std::move(stop));
    if (!r) return fail(r.error());
    return awaited_fate::unknown;
  }
  auto r = wait_for_token(lock, awaited, deadline, std::move(stop));
  if (!r) return fail(r.error());
  // A token is pushed only when the awaited entry leaves the queue (entry ids are never
  // reused), and an 'h' only when it left from the head. Only that one is worth telling: an
  // enqueue's view may be partial ([awaited, us], see queue_round), and then the engine may
  // decide without listing only once nothing is left ahead of the awaited entry. Not for
  // Redlock: there a grant's token is settled by the merge.
  return *r == "h" && !redlock() ? awaited_fate::left_head : awaited_fate::unknown;
}

result<std::optional<std::string>> session::wait_for_token(std::string_view lock,
                                                           const entry& awaited,
                                                           steady::time_point deadline,
                                                           std::stop_token stop) {
  if (auto r = check_open(); !r) return fail(r.error());
  // The master the merge named for this entry (one where it was ahead of a waiter, so its
  // removal pushes a token there). Kept for every waiter of the entry, not taken by the
  // first: another waiter popping on a master where the entry is last gets no token.
  std::size_t server = 0;
  {
    std::lock_guard lk(mu_);
    if (auto it = wait_hint_.find(awaited.id); it != wait_hint_.end()) server = it->second;
  }
  // A crashed holder's entry goes only when its session key expires, which pushes nothing:
  // the safety net re-lists at a quarter of the TTL, or just after the holder's lease ends.
  const auto net = std::max(info_.ttl / 4, std::chrono::milliseconds{10});
  auto safety = net;
  if (awaited.lease_left) {
    safety = std::min(safety, *awaited.lease_left + std::chrono::milliseconds{20});
  }
  auto until = std::min(deadline, steady::now() + safety);
  // How recent a listing must be to stand for this waiter's own: one sent after the awaited
  // lease's end, or within the net.
  auto fresh = safety < net ? std::chrono::milliseconds{20} : net;
  for (;;) {
    // The token stays for every other waiter of the entry (a run of readers behind a
    // writer). The pop also reports whether this session's key still existed when the token
    // came: the releaser's script cannot know who waits, so a waiter whose session the
    // server already ended (and whose entries the next listing reaps) must not take an 'h'
    // as a grant.
    auto r = nodes_[server]->pop_wake(key('w', awaited.id), until, stop, true, key('s', info_.id));
    if (!r || *r || !redlock() || until >= deadline || stop.stop_requested()) return r;
    // Redlock: a round runs the queue script on every master, which purges the entries of
    // ended sessions and pushes their waiters' tokens. So a round of this session since the
    // net's start did the net's work for all of its waiters of the lock, and only a waiter
    // whose net finds none lists. A round costs each master O(queue length): 1000 waiters
    // each listing every quarter TTL kept three masters busy, and handoffs waited seconds
    // behind them (8 of 1000 granted in 30 s).
    const auto last = last_round_sent(lock);
    if (last + fresh <= until) return r;
    until = std::min(deadline, last + net);
    fresh = net;
  }
}

steady::time_point session::last_round_sent(std::string_view lock) const {
  std::lock_guard lk(mu_);
  auto it = round_sent_.find(lock);
  return it == round_sent_.end() ? steady::time_point{} : it->second;
}

// The session's key goes: its renewal (an owner-checked PEXPIRE) fails, and every script
// treats its entries as dead and purges them; its waiters' safety net re-lists within a quarter
// of the TTL. Redlock: done once a majority of the servers dropped it.
result<void> session::end_session(std::string_view session_id) {
  if (auto r = check_open(); !r) return r;
  std::vector<request> reqs(nodes_.size(), request{nullptr, {"DEL", key('s', session_id)}});
  auto replies = run_all(nodes_, reqs);
  std::size_t done = 0;
  for (auto& r : replies) done += r ? 1 : 0;
  if (done >= quorum()) return {};
  for (auto& r : replies) {
    if (!r) return fail(r.error());
  }
  return fail(errc::backend_unavailable, "redis: the session key was not deleted on a majority");
}

void session::close() noexcept {
  {
    // Under mu_, so that no retry_missed() starts a retrier after this.
    std::lock_guard lk(mu_);
    if (closed_.exchange(true)) return;
  }
  // A retry in flight is broken off (its connection closed); the release below covers it.
  retrier_.request_stop();
  if (retrier_.joinable()) retrier_.join();
  try {
    std::vector<own_entry> entries;
    {
      std::lock_guard lk(mu_);
      for (auto* m : {&mine_, &leftover_}) {
        for (auto& [lock, ids] : *m) {
          for (auto& id : ids) entries.push_back({lock, id, false});
        }
      }
      for (auto& list : missed_) {
        for (auto& e : list) {
          if (!mine_.contains(e.lock) || !mine_.at(e.lock).contains(e.id)) entries.push_back(e);
        }
      }
      missed_.clear();
      mine_.clear();
      leftover_.clear();
      queued_.clear();
      settled_.clear();
      values_.clear();
      pending_terms_.clear();
      stamps_.clear();
    }
    // Broken off if the lease ends meanwhile (on_expired; also at the host's exit).
    (void)release_calls(entries, true, {}, expired_.get_token());
  } catch (...) {
  }
}

result<std::vector<std::string>> session::lock_names(std::string_view prefix) {
  if (auto r = check_open(); !r) return fail(r.error());
  std::set<std::string> names;
  std::size_t answered = 0;
  failure last{};
  // A lock's entries are in its queue (q:) or, a lone holder, in its gate key (h:).
  const auto queue_prefix = key('q', "");
  for (auto* n : nodes_) {
    std::string cursor = "0";
    bool ok = true;
    for (int round = 0; round < 100000; ++round) {
      auto r = n->run(
          {nullptr,
           {"SCAN", cursor, "MATCH", glob_escape(cfg_.prefix) + "[hq]:" + glob_escape(prefix) + "*",
            "COUNT", "1000"}});
      if (!r || (*r)->type != REDIS_REPLY_ARRAY || (*r)->elements != 2) {
        last = r ? failure{make_error_code(errc::protocol_error),
                           n->where().where + ": bad SCAN reply"}
                 : r.error();
        ok = false;
        break;
      }
      cursor = std::string(reply_text((*r)->element[0]));
      auto* keys = (*r)->element[1];
      for (std::size_t i = 0; i < keys->elements; ++i) {
        names.insert(std::string(reply_text(keys->element[i]).substr(queue_prefix.size())));
      }
      if (cursor == "0") break;
    }
    answered += ok ? 1 : 0;
  }
  if (answered == 0) return fail(last);
  std::vector<std::string> out;
  for (const auto& name : names) {
    auto q = list(name);  // drops locks whose entries all belong to lapsed sessions
    if (q && !q->entries.empty()) out.push_back(name);
  }
  return out;
}

}  // namespace redis

namespace redis {

result<std::vector<check_finding>> session::diagnose() {
  if (auto r = check_open(); !r) return fail(r.error());
  std::vector<check_finding> out;
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    auto info = nodes_[i]->run({nullptr, {"INFO"}});
    if (!info && is_transient(info.error())) return fail(info.error());
    auto save = nodes_[i]->run({nullptr, {"CONFIG", "GET", "save"}});
    auto fsync = nodes_[i]->run({nullptr, {"CONFIG", "GET", "appendfsync"}});
    auto more = findings(info_text(info), save, fsync, redlock() ? cfg_.servers[i].where : "",
                         cfg_.replicas);
    out.insert(out.end(), more.begin(), more.end());
  }
  if (!cfg_.sentinels.empty()) {
    // Without WAIT a failover can drop this session's last entries: the holder is told at its
    // first renewal on the new master (check_own_entries), possibly after another was granted.
    check_finding f{.check = "sentinel",
                    .guarantee = "loss-signal",
                    .value = "master '" + cfg_.master_name + "' at " + nodes_[0]->master_address() +
                             ", " + std::to_string(cfg_.sentinels.size()) + " sentinel(s) listed"};
    if (cfg_.replicas > 0) {
      f.reason = "a failover is followed through the sentinels; counted writes reached " +
                 std::to_string(cfg_.replicas) +
                 " replica(s), and a lost one is told at the "
                 "first renewal on the new master";
    } else {
      f.status = check_status::weakened;
      f.reason =
          "a failover is followed through the sentinels, but without ?replicas=N it can "
          "drop the last grants: their holder is told lost at its first renewal on the "
          "new master, possibly after another client was granted the lock";
    }
    out.push_back(std::move(f));
  }
  if (redlock()) {
    out.push_back({.check = "redlock",
                   .guarantee = "loss-signal",
                   .status = check_status::weakened,
                   .reason = "Redlock's safety rests on timing: a pause or clock drift beyond "
                             "1% + 2 ms of the TTL can overlap two holders (fence with the "
                             "token)"});
  }
  return out;
}

}  // namespace redis

result<std::unique_ptr<backend_session>> open_redis(const url& u, const session_info& info) {
  auto cfg = redis::parse_config(u, info.request_timeout);
  if (!cfg) return fail(cfg.error());
  auto s = std::make_unique<redis::session>(std::move(*cfg), info);
  if (auto r = s->start(); !r) return fail(r.error());
  return s;
}

}  // namespace dlock::detail
