#include "core/lock_handle.hpp"

#include <limits>
#include <optional>

#include "core/bounded_attempts.hpp"
#include "core/caller_deadline.hpp"
#include "core/capability_refusals.hpp"
#include "core/duration.hpp"
#include "core/events.hpp"
#include "core/hold_core.hpp"
#include "core/joined_stop.hpp"
#include "core/names.hpp"
#include "core/release_messages.hpp"
#include "core/retry.hpp"
#include "core/session_core.hpp"
#include "core/url.hpp"
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
    remember(r.error(),
             "dlock: acquire '" + name_ + "' on " + url_in_text(session_->redacted_url()));
    if (message) *message = std::move(r.error().message);
  } catch (const std::bad_alloc&) {
    ec = std::make_error_code(std::errc::not_enough_memory);
  }
  return false;
}

result<void> lock_handle::acquire_impl(entry_kind kind, steady::time_point deadline,
                                       std::stop_token stop, std::string_view value) {
  if (session_->forked()) return fail(errc::invalid_argument, session_->forked_message());
  // A hold its session's end released or lost (its handle not yet unlocked): the end is the
  // answer, not "already held" (a tester's lock() after close()).
  if (hold_ && !hold_->is_held() && session_->ended_token().stop_requested()) {
    return fail(session_->ended_failure());
  }
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
      // One handle shared by threads as a std::recursive_mutex is: another thread walked in
      // beside the holder (a tester's). Re-entry is the holding thread's.
      if (auto by = taken_by_.load(); by != std::thread::id{} && by != std::this_thread::get_id()) {
        return fail(errc::already_held,
                    "lock '" + name_ +
                        "' is held by this handle on another thread: a recursive_mutex re-enters "
                        "only on the thread that took it (give each thread a handle of its own)");
      }
      ++count_;
      return {};
    }
    if (type_ == lock_type::shared && kind_ == entry_kind::shared &&
        kind == entry_kind::exclusive) {
      return fail(
          errc::upgrade_refused,
          "lock '" + name_ +
              "': upgrade refused: this handle holds it shared, and waiting for exclusive access "
              "behind its own read hold would deadlock; unlock_shared() first, then lock()");
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
  // No request runs past retry_until either (caller_deadline.hpp): a backend that stopped
  // answering held `try_lock_for(500ms)` for 14 s on ZooKeeper (the C client's backstop, then a
  // retry) instead of the 2 s request timeout. An entry its cut-off create may still have made is
  // removed with the others abandoned.
  bounded_attempts enqueue_attempt(retry_until);
  auto q = with_patient_retry(policy, retry_until, deadline, joined.token(), [&] {
    return enqueue_attempt([&] {
      auto& b = session_->backend();
      return mutex_entry ? b.enqueue_mutex(name_, id) : b.enqueue(name_, stored, id);
    });
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
    bounded_attempts value_attempt(retry_until);
    auto v = with_patient_retry(policy, retry_until, deadline, joined.token(), [&] {
      return value_attempt([&] { return session_->backend().set_value(name_, id, value); });
    });
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
    return fail(errc::lock_lost,
                what() + ": lease lapsed before the grant returned (ttl " + ttl +
                    "ms is too short for this host and backend, or this process was paused or "
                    "stopped longer than that)");
  }
  hold_ = std::move(h);
  count_ = 1;
  taken_by_ = std::this_thread::get_id();
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
      return "a semaphore of " + std::to_string(e.limit) + (e.limit == 1 ? " permit" : " permits");
    if (e.kind == entry_kind::candidate) return std::string("an election");
    return std::string(e.kind == entry_kind::shared ? "a shared lock" : "a lock");
  };
  auto owner = other.owner.empty() ? std::string() : " by " + other.owner;
  return failure{make_error_code(errc::invalid_argument),
                 "'" + name_ + "' is used as " + what(other) + owner + ", not as " + what(mine) +
                     " (one name, one recipe and one limit)"};
}

void lock_handle::abandon(const std::string& entry_id) noexcept {
  if (session_->forked()) return;
  // Every exit that does not end holding removes its entry (retried on the session's remover
  // threads until it is gone). While the session lives the caller waits for it, bounded by
  // release_timeout, so that its next attempt does not queue behind its own old entry; once
  // the session has ended nothing is worth waiting for.
  try {
    std::optional<steady::time_point> until;
    if (!session_->ended_token().stop_requested())
      until = steady::now() + session_->options().release_timeout;
    auto ticket = session_->remove_in_background(name_, entry_id, until);
    if (until && !ticket->wait_until(*until)) {
      // Said, as an unconfirmed release is: a process that ends now (`dlock run -w` timing
      // out on a stalled server) leaves the entry ahead of every later waiter until its
      // lease ends, and a tester saw the next holder wait 12 s with no word why.
      const auto ttl = session_->info().ttl;
      emit(session_->options().observer, [&](observer& o) {
        o.on_log(log_level::warning,
                 what() + ": could not remove this waiter's place in the queue within " +
                     format_duration(session_->options().release_timeout) +
                     " (the backend did not answer); retried in the background while this process "
                     "runs, else it goes when the session ends, within its lease of " +
                     format_duration(ttl) + " at the latest");
      });
    }
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
  if (session_->forked()) {
    // The parent's hold: released here, the server would free it under the parent.
    ec = make_error_code(errc::invalid_argument);
    remember(failure{ec, session_->forked_message()}, "dlock: release '" + name_ + "'");
    return;
  }
  if (hold_->state() == hold_state::released) {
    // session::close() released it: no loss (its signal never fired), nothing left to send.
    hold_.reset();
    count_ = 0;
    ec = make_error_code(errc::session_closed);
    remember(failure{ec, "lock '" + name_ + "' was released when its session was closed"},
             "dlock: release");
    return;
  }
  if (--count_ > 0) {
    ec.clear();
    return;
  }
  auto h = std::move(hold_);
  bool was_lost = h->state() == hold_state::lost || !h->is_held() ||
                  session_->state() == session_state::expired;
  session_->remove_hold(h.get());
  // A loss is never reported as a release: a holder that let go after its lease ended but
  // before the session told its holds (the monitor's wake-up, or another hold's loss callback
  // running first) ended `released`, and its lost_token() never fired.
  if (was_lost) h->set_state(hold_state::lost);
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
  } catch (const std::exception& e) {  // out of memory or threads: said, not "the server"
    ec = make_error_code(errc::backend_error);
    message = what() + ": the release failed here, not on the server: " + e.what();
  } catch (...) {
    ec = make_error_code(errc::backend_error);
  }
  // Ends lost where the removal found the lease over (the entry gone, the session expired).
  h->set_state(ec == errc::lock_lost ? hold_state::lost : hold_state::released);
  report();
  if (ec)
    remember(failure{ec, message},
             "dlock: release '" + name_ + "' on " + url_in_text(session_->redacted_url()));
}

}  // namespace dlock::detail
