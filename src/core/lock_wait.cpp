// lock_handle's wait for a grant: the loop between the enqueue and the grant (or the deadline),
// waiting on what the verdict says to wait on and listing again after each wake-up.
#include "core/caller_deadline.hpp"
#include "core/events.hpp"
#include "core/lock_handle.hpp"
#include "core/poll_pacer.hpp"
#include "core/retry.hpp"
#include "core/session_core.hpp"
#include "core/verdict.hpp"

namespace dlock::detail {

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
                  what() +
                      ": this session's queue entry is gone (its lease lapsed on the server, an "
                      "operator deleted it, or the server lost its data)");
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

}  // namespace dlock::detail
