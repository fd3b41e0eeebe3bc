#include "core/lock_handle.hpp"

#include <limits>

#include "core/caller_deadline.hpp"
#include "core/capability_refusals.hpp"
#include "core/events.hpp"
#include "core/hold_core.hpp"
#include "core/joined_stop.hpp"
#include "core/names.hpp"
#include "core/poll_pacer.hpp"
#include "core/release_messages.hpp"
#include "core/retry.hpp"
#include "core/session_core.hpp"
#include "core/verdict.hpp"

namespace dlock::detail {
lock_handle::lock_handle(std::shared_ptr<session_core> s, std::string name, lock_type type,
                         std::uint32_t permits)
    : session_(std::move(s)), name_(std::move(name)), type_(type), permits_(permits) {}

lock_handle::~lock_handle() {
  if (hold_) {
    count_ = 1;
    std::error_code ec;
    release(ec);
  }
}

namespace {

recipe_kind recipe_of(entry_kind k) noexcept {
  switch (k) {
    case entry_kind::exclusive:
      return recipe_kind::lock;
    case entry_kind::shared:
      return recipe_kind::shared;
    case entry_kind::permit:
      return recipe_kind::permit;
    case entry_kind::candidate:
      return recipe_kind::candidate;
  }
  return recipe_kind::lock;
}

}  // namespace

bool lock_handle::acquire(entry_kind kind, steady::time_point deadline, std::stop_token stop,
                          std::error_code& ec, std::string* message,
                          std::string_view value) noexcept {
  const auto& obs = session_->options().observer;
  const auto started = obs ? steady::now() : steady::time_point{};
  const bool reentry = hold_ != nullptr;
  auto report = [&](std::error_code code) {
    emit(obs, [&](observer& o) {
      o.on_acquire({.lock = name_,
                    .recipe = recipe_of(kind),
                    .waited = steady::now() - started,
                    .error = code,
                    .token = code ? fencing_token{} : hold_->token(),
                    .reentered = reentry && !code});
    });
  };
  try {
    auto r = acquire_impl(kind, deadline, std::move(stop), value);
    if (r) {
      ec.clear();
      if (!reentry && obs) granted_at_ = steady::now();  // only release events read it
      report({});
      return true;
    }
    ec = r.error().code;
    report(ec);
    remember(r.error(), "dlock: acquire '" + name_ + "' on " + session_->redacted_url());
    if (message) *message = std::move(r.error().message);
  } catch (const std::bad_alloc&) {
    ec = std::make_error_code(std::errc::not_enough_memory);
  }
  return false;
}

result<void> lock_handle::acquire_impl(entry_kind kind, steady::time_point deadline,
                                       std::stop_token stop, std::string_view value) {
  if (hold_) {
    if (type_ == lock_type::recursive) {
      // Re-entry grants nothing new, so it must not outlive what it re-enters: a hold whose
      // lease lapsed (another client may hold the lock now) is not re-entered.
      if (session_->ended_token().stop_requested()) return fail(session_->ended_failure());
      if (!hold_->is_held()) {
        return fail(errc::lock_lost, "lock '" + name_ + "': this handle's hold was lost");
      }
      if (count_ == std::numeric_limits<decltype(count_)>::max()) {
        return fail(errc::invalid_argument, "lock '" + name_ + "' is re-entered " +
                                                std::to_string(count_) +
                                                " times, the most a recursive_mutex counts");
      }
      ++count_;
      return {};
    }
    if (type_ == lock_type::shared && kind_ == entry_kind::shared &&
        kind == entry_kind::exclusive) {
      return fail(errc::upgrade_refused, "lock '" + name_ + "' is held shared by this handle");
    }
    return fail(errc::already_held, "lock '" + name_ + "' is already held by this handle");
  }
  if (session_->ended_token().stop_requested()) return fail(session_->ended_failure());
  if (session_->options().observe_only) {
    return fail(errc::invalid_argument,
                what() + ": this session only observes (session_options::observe_only)");
  }
  kind_ = kind;  // nothing is held: what() names the recipe being acquired
  if (auto ok = check_recipe(kind, value); !ok) return ok;
  const bool one_try = deadline <= steady::now();
  joined_stop joined(stop, session_->ended_token());
  auto id = session_->next_entry_id();
  if (kind == entry_kind::permit) id = permit_entry_id(id, permits_);
  if (kind == entry_kind::candidate) id = candidate_entry_id(id);
  // Backends store a permit or a candidate as an exclusive entry; its id carries the rest
  // (verdict.hpp).
  const auto stored = kind == entry_kind::shared ? kind : entry_kind::exclusive;
  const auto& policy = session_->options().retry;
  // A retry after a lost reply finds the entry it created: enqueue is idempotent on `id`.
  auto retry_until = std::max(deadline, steady::now() + session_->options().request_timeout);
  // A mutex's entry (not a shared_mutex writer's) may be named apart by the backend, for other
  // libraries that read it (backend.hpp: enqueue_mutex).
  const bool mutex_entry = kind == entry_kind::exclusive && type_ != lock_type::shared;
  // Past the policy's attempts, on until the acquire's deadline, as a waiter's listings are:
  // an acquire begun during an outage shorter than the lease waits it out (a one-try acquire
  // has no patience beyond the policy).
  auto q = with_patient_retry(policy, retry_until, deadline, joined.token(), [&] {
    auto& b = session_->backend();
    return mutex_entry ? b.enqueue_mutex(name_, id) : b.enqueue(name_, stored, id);
  });
  if (!q) {
    abandon(id);
    if (session_->ended_token().stop_requested()) return fail(session_->ended_failure());
    return fail(q.error());
  }
  read_recipes(q->entries);
  if (kind == entry_kind::candidate) {
    // Before the wait: a leader is never seen without its value by the caller it returns to
    // (observers skip the moment between the two requests: version 0).
    auto v = with_patient_retry(policy, retry_until, deadline, joined.token(),
                                [&] { return session_->backend().set_value(name_, id, value); });
    if (!v) {
      abandon(id);
      if (session_->ended_token().stop_requested()) return fail(session_->ended_failure());
      return fail(v.error());
    }
    if (auto pos = find_entry(q->entries, id)) {
      q->entries[*pos].value = value;
      q->entries[*pos].version = *v;
    }
  }
  auto granted = wait_for_grant(id, std::move(*q), deadline, one_try, joined.token());
  if (!granted) {
    abandon(id);
    if (session_->ended_token().stop_requested()) return fail(session_->ended_failure());
    if (stop.stop_requested()) {
      return fail(errc::cancelled, "waiting for " + what() + " was cancelled");
    }
    return fail(granted.error());
  }
  auto pos = find_entry(granted->entries, id);
  auto h = std::make_shared<hold_core>(session_, name_, id, granted->entries[*pos].token);
  session_->add_hold(h);
  // Never report a grant whose lease already lapsed (a pause between send and return).
  if (!h->is_held() || session_->ended_token().stop_requested()) {
    session_->remove_hold(h.get());
    abandon(id);
    auto ttl = std::to_string(session_->info().ttl.count());
    return fail(errc::lock_lost, what() + ": lease lapsed before the grant returned (ttl " + ttl +
                                     "ms is too short for this host and backend)");
  }
  hold_ = std::move(h);
  count_ = 1;
  return {};
}

std::string lock_handle::what() const {
  return (kind_ == entry_kind::candidate ? "election '"
          : kind_ == entry_kind::permit  ? "semaphore '"
                                         : "lock '") +
         name_ + "'";
}

result<void> lock_handle::check_recipe(entry_kind kind, std::string_view value) const {
  const auto caps = session_->backend().caps();
  // The caller's context already names the URL ("acquire 'x' on URL: ..."): name the backend.
  const std::string& url = session_->redacted_url();
  const std::string backend = "the " + url.substr(0, url.find("://")) + " backend";
  if (kind == entry_kind::shared && !caps.shared_locks) {
    return fail(errc::unsupported, backend + " " + lacks_shared_locks());
  }
  if (kind == entry_kind::candidate && !caps.values) {
    return fail(errc::unsupported, backend + " " + lacks_elections(caps));
  }
  if (value.size() > max_value_size) {
    return fail(errc::invalid_argument, what() + ": a value of " + std::to_string(value.size()) +
                                            " bytes is over the " + std::to_string(max_value_size) +
                                            "-byte limit");
  }
  if (kind == entry_kind::permit && !caps.permits) {
    return fail(errc::unsupported, backend + " " + lacks_semaphores(caps));
  }
  return {};
}

failure lock_handle::conflict_failure(const entry& mine, const entry& other) const {
  auto what = [](const entry& e) {
    if (e.kind == entry_kind::permit)
      return "a semaphore of " + std::to_string(e.limit) + " permits";
    if (e.kind == entry_kind::candidate) return std::string("an election");
    return std::string(e.kind == entry_kind::shared ? "a shared lock" : "a lock");
  };
  auto owner = other.owner.empty() ? std::string() : " by " + other.owner;
  return failure{make_error_code(errc::invalid_argument),
                 "'" + name_ + "' is used as " + what(other) + owner + ", not as " + what(mine) +
                     " (one name, one recipe and one limit)"};
}

result<queue_view> lock_handle::wait_for_grant(const std::string& id, queue_view q,
                                               steady::time_point deadline, bool one_try,
                                               std::stop_token stop) {
  const auto& policy = session_->options().retry;
  idle_wake_pacer idle;  // a wake-up that keeps lying must not spin this loop
  for (int failures = 0;;) {
    if (session_->ended_token().stop_requested()) return fail(session_->ended_failure());
    auto pos = find_entry(q.entries, id);
    if (!pos) {
      return fail(errc::session_expired,
                  what() + ": this session's queue entry is gone (lease lapsed)");
    }
    auto v = decide(q, *pos);
    if (v.conflict) return fail(conflict_failure(q.entries[*pos], q.entries[*v.conflict]));
    if (v.holds) return q;
    if (one_try) {
      return fail(errc::would_block, permits_ ? what() + ": all its permits are held"
                                     : kind_ == entry_kind::candidate ? what() + " has a leader"
                                                                      : what() + " is held");
    }
    if (stop.stop_requested()) return fail(errc::cancelled, "wait for " + what() + " cancelled");
    if (steady::now() >= deadline) {
      return fail(errc::timed_out, what() + " not granted before the deadline");
    }
    const auto wait_started = steady::now();
    result<awaited_fate> w = awaited_fate::unknown;
    if (v.wait_change) {
      // Kept out by a holder the backend could not list: it has no id to wait on.
      if (auto r = session_->backend().wait_change(name_, q, deadline, stop); !r)
        w = fail(r.error());
    } else if (v.wait_count == 1) {
      w = session_->backend().wait_knowing(name_, q.entries[v.wait_first], deadline, stop);
    } else {
      auto awaited = std::span<const entry>(q.entries).subspan(v.wait_first, v.wait_count);
      if (auto r = session_->backend().wait_any(name_, awaited, deadline, stop); !r)
        w = fail(r.error());
    }
    const auto waited = steady::now() - wait_started;
    if (!w) {
      // Waiting failed (e.g. the connection dropped): back off instead of spinning.
      if (!is_transient(w.error())) return fail(w.error());
      backoff_sleep(policy, failures++, deadline, stop);
    } else if (*w != awaited_fate::unknown && q.unlisted.empty()) {
      // The awaited entry is certainly gone (from the head: with every entry ahead of it). If
      // the view without them grants us the lock, it holds -- entries ahead only ever leave,
      // and their leaving never turns "holds" into "waits" -- and the handoff costs no request
      // at all (backend_session::wait_knowing). Not past an unlisted holder, whose leaving
      // nothing here would see.
      auto rest = q;
      const auto first = *w == awaited_fate::left_head ? 0 : v.wait_first;
      rest.entries.erase(rest.entries.begin() + static_cast<std::ptrdiff_t>(first),
                         rest.entries.begin() + static_cast<std::ptrdiff_t>(v.wait_first + 1));
      if (auto me = find_entry(rest.entries, id); me && decide(rest.entries, *me).holds) {
        if (session_->ended_token().stop_requested()) return fail(session_->ended_failure());
        woke(wakeup_kind::changed);
        return rest;
      }
    }
    // Stopped (cancelled, or the session ended while waiting), or the deadline reached: decide
    // at the top of the loop, without another round trip on what may be a dead link. A listing
    // at the deadline could only find a grant at the last instant, and against a server that
    // stopped answering it held the caller for a request timeout and more (a tester's `-w 4s`
    // returned after 15 s).
    if (stop.stop_requested()) continue;
    if (steady::now() >= deadline) {
      woke(wakeup_kind::timeout);
      continue;
    }
    session_->count_wakeup_listing();
    // Past the policy's attempts, on until the deadline: a waiter rides out an outage shorter
    // than its lease (a server restart, a proxy down for seconds) as the session's renewals
    // do, and ends with its deadline (timed_out) or its session (session_expired). A tester's
    // `dlock run -w 60s` on Redis gave up after about 1.2 s of refused connections, while the
    // holder it waited for kept its lock through the same outage. Nothing runs past the
    // deadline: no retry begins after it, and a backend that can cut a request off ends it
    // there (caller_deadline.hpp); a silent server held a tester's `-w 4s` for 15 s.
    const auto list_started = steady::now();
    auto next = with_patient_retry(policy, deadline, deadline, stop, [&] {
      caller_deadline_scope bounded(deadline);
      return session_->backend().list_for_waiter(name_, id);
    });
    const auto listed = steady::now() - list_started;
    if (!next) {
      if (stop.stop_requested() || steady::now() >= deadline) continue;  // reported above
      return fail(next.error());
    }
    const bool unchanged = same_queue(q, *next);
    woke(steady::now() >= deadline ? wakeup_kind::timeout
         : unchanged               ? wakeup_kind::spurious
                                   : wakeup_kind::changed);
    idle.after_wake(unchanged, waited, listed, deadline, stop);
    q = std::move(*next);
    read_recipes(q.entries);
  }
}

void lock_handle::woke(wakeup_kind kind) const noexcept {
  emit(session_->options().observer, [&](observer& o) { o.on_wakeup(name_, kind); });
}

void lock_handle::abandon(const std::string& entry_id) noexcept {
  // Every exit that does not end holding removes its entry (retried on the session's remover
  // threads until it is gone). While the session lives the caller waits for it, bounded by
  // release_timeout, so that its next attempt does not queue behind its own old entry; once
  // the session has ended nothing is worth waiting for.
  try {
    std::optional<steady::time_point> until;
    if (!session_->ended_token().stop_requested())
      until = steady::now() + session_->options().release_timeout;
    auto ticket = session_->remove_in_background(name_, entry_id, until);
    if (until) ticket->wait_until(*until);
  } catch (...) {
  }
}

void lock_handle::release(std::error_code& ec) noexcept {
  if (!hold_) {
    ec = make_error_code(errc::not_held);
    // Else last_error_message() would still show an earlier, unrelated failure.
    remember(failure{ec, "this handle does not hold lock '" + name_ + "'"}, "dlock: release");
    return;
  }
  if (--count_ > 0) {
    ec.clear();
    return;
  }
  auto h = std::move(hold_);
  bool was_lost = h->state() == hold_state::lost || !h->is_held();
  h->set_state(hold_state::released);
  session_->remove_hold(h.get());
  ec.clear();
  std::string message;
  bool refused = false;
  auto report = [&] {
    emit(session_->options().observer, [&](observer& o) {
      o.on_release({.lock = name_,
                    .recipe = recipe_of(kind_),
                    .held = steady::now() - granted_at_,
                    .token = h->token(),
                    .error = ec});
      if (ec == errc::backend_unavailable || refused) o.on_log(log_level::warning, message);
    });
  };
  try {
    // Known lost: the removal is tidiness, done in the background; never wait on the network.
    std::optional<steady::time_point> until;
    if (!was_lost) until = steady::now() + session_->options().release_timeout;
    auto ticket = session_->remove_in_background(name_, h->entry_id(), until);
    if (was_lost) {
      ec = make_error_code(errc::lock_lost);
    } else if (ticket->wait_until(*until)) {
      // Refused for good: the entry stays until the session ends, which the engine has
      // started (session_core::end_after_refusal). The refusal is the error.
      if (ticket->refused()) {
        auto why = ticket->last_error().value_or(failure{make_error_code(errc::backend_error), {}});
        ec = why.code;
        refused = true;
        message = refused_message(name_, session_->info().ttl, why, true);
      } else if (ticket->was_absent()) {
        // Absent at the first try: the entry had been purged or deleted -- it was not this
        // session's hold any more when it was let go.
        ec = make_error_code(errc::lock_lost);
        message = what() + ": the entry was gone (the lease had ended)";
      } else if (ticket->ended_unconfirmed()) {
        ec = make_error_code(errc::lock_lost);
        message = what() + ": its lease ended before the removal was confirmed (the lock is free)";
      }
    } else if (session_->state() == session_state::expired) {
      ec = make_error_code(errc::lock_lost);  // the lease ended while we waited
    } else if (session_->state() != session_state::closed) {
      auto last = ticket->last_error();
      if (last && !is_transient(*last)) {
        // The server answered and refused (a read-only server, say): it is reachable, and
        // its refusal, not "unreachable", is the error. The removal goes on being retried.
        ec = last->code;
        refused = true;
        message = refused_message(name_, session_->info().ttl, *last, false);
      } else {
        ec = make_error_code(errc::backend_unavailable);
        session_->note_unreachable();
        message = unconfirmed_message(name_, session_->info().ttl, last);
      }
    }
  } catch (...) {
    ec = make_error_code(errc::backend_error);
  }
  report();
  if (ec)
    remember(failure{ec, message}, "dlock: release '" + name_ + "' on " + session_->redacted_url());
}

}  // namespace dlock::detail
