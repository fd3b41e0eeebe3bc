// Semaphores and elections on redis:// (docs/redis.md): registered waits, observers and
// values. The recipe decides in the engine; these only store, register and wait.
#include <hiredis/hiredis.h>

#include <condition_variable>
#include <mutex>
#include <random>

#include "backends/redis/redis_session.hpp"
#include "core/verdict.hpp"

namespace dlock::detail::redis {
namespace {

void sleep_interruptibly(std::chrono::milliseconds d, std::stop_token stop) {
  std::mutex m;
  std::condition_variable_any cv;
  std::unique_lock lk(m);
  cv.wait_for(lk, stop, d, [] { return false; });
}

}  // namespace

std::string session::next_inbox() {
  return key('i', info_.id + ':' + std::to_string(inboxes_.fetch_add(1) + 1));
}

// The semaphore recipe waits on the N entries just ahead (verdict.hpp). The waiter registers
// one inbox of its own on each of them and blocks on that inbox: a permit's removal pushes
// to the inboxes registered on it only, so a release wakes at most the N waiters whose
// answer it may change, however many wait; each decides for itself from a fresh listing.
result<void> session::wait_any(std::string_view lock, std::span<const entry> awaited,
                               steady::time_point deadline, std::stop_token stop) {
  if (auto r = check_open(); !r) return r;
  if (awaited.empty()) return {};
  if (redlock()) return backend_session::wait_any(lock, awaited, deadline, std::move(stop));
  // A crashed holder's entry goes only when its session key expires, which pushes nothing.
  // So each registration reads the earliest end of the awaited leases, as a mutex waiter's
  // listing does (wait_for_token), and the next look comes just after it (or at a quarter of
  // the TTL, if sooner): a live holder has renewed by then, a dead one is seen gone. The
  // engine's view knew the leases only as they were at its listing, and past a first look
  // there the waiter was left to its own net (ttl=45s: granted 13 s in, behind a 2 s lease;
  // a pop may also end up to 100 ms before the lease end it aimed at). Only a removal or an
  // ended session returns to the engine, so a waiter lists again only when its answer may
  // change.
  const auto net = std::max(info_.ttl / 4, std::chrono::milliseconds{10});
  auto inbox = next_inbox();
  std::vector<std::string> argv{
      "2", key('m', lock), key('h', lock), cfg_.prefix, std::to_string(wake_ttl().count()), inbox};
  for (const auto& e : awaited) argv.push_back(e.id);
  while (!stop.stop_requested() && steady::now() < deadline) {
    auto r = nodes_[0]->run({&watch_script, argv}, stop);
    if (stop.stop_requested()) return {};
    if (!r) return fail(r.error());
    if ((*r)->type != REDIS_REPLY_INTEGER || (*r)->integer == 0) return {};  // one has left
    auto safety = net;
    if (const auto lease = (*r)->integer; lease > 0)
      safety = std::min(safety, std::chrono::milliseconds{lease} + std::chrono::milliseconds{20});
    const auto until = std::min(deadline, steady::now() + safety);
    auto popped = nodes_[0]->pop_wake(inbox, until, stop);
    if (!popped) return fail(popped.error());
    if (*popped) return {};
  }
  return {};
}

// Observers register an inbox on the lock first and only then compare a fresh listing with
// what they saw: a change after the listing pushes to the inbox, one before it shows in it.
result<void> session::wait_change(std::string_view lock, const queue_view& seen,
                                  steady::time_point deadline, std::stop_token stop) {
  if (auto r = check_open(); !r) return r;
  if (redlock() && !seen.unlisted.empty()) {
    // The merge named no entry to wait on (merge_result::unlisted): nothing would push a
    // wake-up for what changes, so look again shortly, jittered so that the waiters of a
    // split do not keep meeting.
    thread_local std::minstd_rand rng{std::random_device{}()};
    auto ms = std::chrono::milliseconds{std::uniform_int_distribution<int>(5, 25)(rng)};
    auto left = std::chrono::ceil<std::chrono::milliseconds>(
        std::max(deadline - steady::now(), steady::duration{}));
    sleep_interruptibly(std::min(ms, left), stop);
    return {};
  }
  auto inbox = next_inbox();
  while (!stop.stop_requested() && steady::now() < deadline) {
    // Redlock: registered on every master, woken by the first push from any of them (a
    // change shows on a majority, so on at least one master a majority listing reaches).
    std::vector<std::size_t> registered;
    const std::vector<std::string> argv{"1", key('o', lock), inbox,
                                        std::to_string(wake_ttl().count())};
    auto regs =
        run_all(nodes_, std::vector<request>(nodes_.size(), {&observe_script, argv}), {}, stop);
    if (stop.stop_requested()) return {};
    for (std::size_t i = 0; i < regs.size(); ++i) {
      if (regs[i]) registered.push_back(i);
    }
    if (!redlock() && !regs[0]) return fail(regs[0].error());
    if (registered.size() < quorum()) return fail(quorum_failure("observe", regs, 0));
    auto now = list(lock);
    if (stop.stop_requested()) return {};
    if (!now) return fail(now.error());
    if (!same_entries(now->entries, seen.entries)) return {};
    // A leader that crashed leaves when its session key expires, which pushes nothing: look
    // again just after its lease ends (the listing purges it and wakes the others).
    auto safety = std::max(info_.ttl / 4, std::chrono::milliseconds{10});
    for (const auto& e : now->entries) {
      if (e.lease_left) safety = std::min(safety, *e.lease_left + std::chrono::milliseconds{20});
    }
    if (!now->unlisted.empty()) safety = std::min(safety, std::chrono::milliseconds{25});
    auto popped = pop_any(inbox, registered, std::min(deadline, steady::now() + safety), stop);
    if (!popped) return fail(popped.error());
    if (*popped) return {};
  }
  return {};
}

result<bool> session::pop_any(const std::string& inbox, const std::vector<std::size_t>& servers,
                              steady::time_point until, std::stop_token stop) {
  if (servers.size() == 1) {
    auto p = nodes_[servers[0]]->pop_wake(inbox, until, stop);
    if (!p) return fail(p.error());
    return p->has_value();
  }
  // One blocking pop per master; the first to get a push stops the others.
  std::stop_source first;
  std::stop_callback relay(stop, [&first] { first.request_stop(); });
  std::mutex mu;
  std::size_t failed = 0;
  std::optional<failure> last_failure;
  bool got = false;
  {
    std::vector<std::jthread> pops;
    for (auto s : servers) {
      pops.emplace_back([&, s] {
        auto p = nodes_[s]->pop_wake(inbox, until, first.get_token());
        std::lock_guard lk(mu);
        if (!p) {
          ++failed;
          last_failure = p.error();
        } else if (p->has_value()) {
          got = true;
          first.request_stop();
        }
      });
    }
  }
  if (got) return true;
  // The wait holds while a majority of masters can still push to it.
  if (servers.size() - failed < quorum() && last_failure) return fail(*last_failure);
  return false;
}

// set_value_at_script's argv: the owner's write with `sid`, a reader's write-back without.
std::vector<std::string> session::set_value_at_argv(std::string_view lock, std::string_view id,
                                                    std::string_view value, std::uint64_t version,
                                                    std::string_view sid,
                                                    std::uint64_t term) const {
  return {"6",
          key('m', lock),
          key('h', lock),
          key('v', lock),
          key('o', lock),
          key('s', info_.id),
          key('t', lock),
          std::string(id),
          std::string(value),
          std::to_string(version),
          std::to_string(wake_ttl().count()),
          std::string(sid),
          term ? std::to_string(term) : std::string()};
}

result<std::uint64_t> session::set_value_quorum(std::string_view lock, std::string_view entry_id,
                                                std::string_view value) {
  std::uint64_t version = 0, term = 0;
  {
    std::lock_guard lk(mu_);
    auto& own = values_[std::string(entry_id)];
    own.value = std::string(value);
    version = ++own.version;  // one per attempt: a version never names two values
    if (auto t = pending_terms_.find(entry_id); t != pending_terms_.end()) term = t->second;
  }
  const auto argv = set_value_at_argv(lock, entry_id, value, version, info_.id, term);
  auto replies = run_all(nodes_, std::vector<request>(nodes_.size(), {&set_value_at_script, argv}),
                         {}, expired_.get_token());
  std::size_t ok = 0, gone = 0;
  for (const auto& r : replies) {
    if (!r || (*r)->type != REDIS_REPLY_INTEGER) continue;
    if ((*r)->integer < 0) {
      ++gone;
    } else if (static_cast<std::uint64_t>((*r)->integer) >= version) {
      ++ok;
    }
  }
  if (ok >= quorum()) {
    // A master that took the value recorded the term with it (set_value_at_text).
    if (term) {
      std::lock_guard lk(mu_);
      pending_terms_.erase(std::string(entry_id));
    }
    return version;
  }
  if (gone > nodes_.size() - quorum()) {
    return fail(errc::lock_lost, "redlock: entry " + std::string(entry_id) + " of '" +
                                     std::string(lock) +
                                     "' is gone on a majority of masters: no value set");
  }
  return fail(quorum_failure("set_value", replies, 0));
}

void session::repair_values(std::string_view lock, merge_result& m) {
  for (const auto& r : m.repairs) {
    auto pos = find_entry(m.entries, r.id);
    if (!pos) continue;
    std::size_t ok = r.have;
    if (!r.servers.empty()) {
      const auto argv = set_value_at_argv(lock, r.id, r.value, r.version, "");
      std::vector<node*> targets;
      for (auto s : r.servers) targets.push_back(nodes_[s]);
      auto replies =
          run_all(targets, std::vector<request>(targets.size(), {&set_value_at_script, argv}), {},
                  expired_.get_token());
      for (const auto& x : replies) {
        if (x && (*x)->type == REDIS_REPLY_INTEGER && (*x)->integer >= 0 &&
            static_cast<std::uint64_t>((*x)->integer) >= r.version) {
          ++ok;
        }
      }
    }
    if (ok < quorum()) {
      m.entries[*pos].value = r.fallback_value;
      m.entries[*pos].version = r.fallback_version;
    }
  }
}

result<std::uint64_t> session::set_value(std::string_view lock, std::string_view entry_id,
                                         std::string_view value) {
  if (auto r = check_open(); !r) return fail(r.error());
  // An id holds the session id at its start, or after a Redlock id's time (entry_id()).
  const auto own = entry_id.starts_with(info_.id) ||
                   (redlock() && entry_id.size() > 15 && entry_id.substr(15).starts_with(info_.id));
  if (value.size() > max_value_size || !own) {
    return fail(errc::invalid_argument, "redis: set_value of " + std::string(entry_id) +
                                            ": not this session's entry, or a value over " +
                                            std::to_string(max_value_size) + " bytes");
  }
  if (redlock()) {
    // Not while another thread re-queues it (round_mutex): it would find it gone.
    std::shared_lock rl(round_mutex(lock));
    return set_value_quorum(lock, entry_id, value);
  }
  // The version is chosen here, one per attempt, and the server keeps the highest it was
  // sent (set_value_at_text, as on Redlock): a write delivered late by a slow link, after its
  // caller gave up on it and proclaimed again, never puts an older value back (a tester's
  // "v2-late" replaced "v3-new" with version 3).
  std::uint64_t version = 0;
  {
    std::lock_guard lk(mu_);
    auto& mine = values_[std::string(entry_id)];
    mine.value = std::string(value);
    version = ++mine.version;
  }
  auto r = nodes_[0]->run(synced({&set_value_at_script,
                                  set_value_at_argv(lock, entry_id, value, version, info_.id, 0)}),
                          expired_.get_token());
  if (!r) return fail(r.error());
  if ((*r)->type != REDIS_REPLY_INTEGER) {
    return fail(errc::protocol_error, cfg_.servers[0].where + ": malformed set_value reply");
  }
  if ((*r)->integer < 0) {
    return fail(errc::lock_lost, cfg_.servers[0].where + ": entry " + std::string(entry_id) +
                                     " of '" + std::string(lock) +
                                     "' is gone (or its session's lease ended): no value set");
  }
  return static_cast<std::uint64_t>((*r)->integer);
}

}  // namespace dlock::detail::redis
