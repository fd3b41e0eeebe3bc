// dlock::inspect and dlock::list_locks: read-only views for status tools.
#include <algorithm>
#include <dlock/inspect.hpp>

#include "core/caller_deadline.hpp"
#include "core/names.hpp"
#include "core/retry.hpp"
#include "core/session_core.hpp"
#include "core/verdict.hpp"

namespace dlock {
namespace {

// One backend request of an operator call, with the session's retries of transient faults
// (a server that picked the request as a deadlock victim, a dropped connection), as every
// other operation has them; within request_timeout, as a try-lock, or the caller's deadline
// (caller_deadline.hpp) if that comes first.
template <class F>
auto retried(const detail::session_core& core, F&& f) {
  // A forked child's copy of the session reaches the parent's connections: not its to use.
  if (core.forked())
    detail::raise({make_error_code(errc::invalid_argument), core.forked_message()}, "dlock");
  auto until = detail::within_caller_deadline(std::chrono::steady_clock::now() +
                                              core.options().request_timeout);
  auto r = detail::with_retry(core.options().retry, until, {}, std::forward<F>(f));
  // A request failed by the session's end (Redis breaks them off: "cancelled") fails as the
  // end itself, on every backend: session_expired or session_closed, naming why.
  if (!r && core.ended_token().stop_requested())
    return decltype(r)(detail::fail(core.ended_failure()));
  return r;
}

}  // namespace

std::vector<queue_entry> inspect(const session& s, std::string_view name) {
  if (!s)
    throw system_error(make_error_code(errc::invalid_argument),
                       "dlock: inspect on an empty session");
  if (auto v = detail::validate_lock_name(name); !v) detail::raise(v.error(), "dlock");
  auto& core = *s.core();
  auto q = retried(core, [&] { return core.backend().list(name); });
  if (!q) detail::raise(q.error(), "dlock: inspect '" + std::string(name) + "'");
  detail::read_recipes(q->entries);
  std::vector<queue_entry> out;
  // An unlisted holder (another connection's advisory lock) shows in its place, with what
  // the backend could tell of it; one it knows nothing of (a Redlock view's) is no one to show.
  std::size_t u = 0;
  auto add_unlisted_before = [&](std::size_t i) {
    for (; u < q->unlisted.size() && q->unlisted[u].before <= i; ++u) {
      const auto& h = q->unlisted[u];
      if (h.owner.empty()) continue;
      queue_entry e;
      e.holds = detail::unlisted_holds(*q, u);
      e.shared = h.kind == detail::entry_kind::shared;
      e.owner = h.owner;
      out.push_back(std::move(e));
    }
  };
  const bool waiter_tokens = s.capabilities().waiter_tokens;
  for (std::size_t i = 0; i < q->entries.size(); ++i) {
    add_unlisted_before(i);
    const auto& e = q->entries[i];
    const bool holds = detail::entry_holds(*q, i);
    out.push_back(queue_entry{holds, e.kind == detail::entry_kind::shared,
                              holds || waiter_tokens ? e.token : 0, e.owner, e.since, e.lease_left,
                              e.limit, e.kind == detail::entry_kind::candidate});
  }
  add_unlisted_before(q->entries.size());
  return out;
}

std::vector<queue_entry> force_unlock(const session& s, std::string_view name) {
  auto refuse = [&](errc code, const std::string& why) {
    throw system_error(make_error_code(code),
                       "dlock: force unlock '" + std::string(name) + "': " + why);
  };
  if (!s) refuse(errc::invalid_argument, "empty session");
  if (auto v = detail::validate_lock_name(name); !v) detail::raise(v.error(), "dlock");
  // Before what the backend could do: in a forked child it may do nothing at all.
  if (s.core()->forked()) refuse(errc::invalid_argument, s.core()->forked_message());
  if (const auto caps = s.capabilities(); !caps.ends_other_sessions) {
    const auto why = caps.no_ending_others_because;
    refuse(errc::unsupported,
           s.url() + " cannot end another client's session: " +
               (why.empty() ? std::string("end the holder's process or wait for its lease")
                            : std::string(why)));
  }
  auto& core = *s.core();
  if (core.options().observe_only) refuse(errc::invalid_argument, "this session only observes");
  auto q = retried(core, [&] { return core.backend().list(name); });
  if (!q) detail::raise(q.error(), "dlock: force unlock '" + std::string(name) + "'");
  detail::read_recipes(q->entries);
  std::vector<queue_entry> ended;
  std::vector<std::string> sessions;
  // Only listed entries name a session to end: an unlisted holder is none of this backend's.
  for (std::size_t i = 0; i < q->entries.size(); ++i) {
    if (!detail::entry_holds(*q, i)) continue;
    const auto& e = q->entries[i];
    // Entry ids are "[<time>.]<session id>-<counter>" (backend_session::entry_id); session
    // ids are hex, so a '.' ends a Redlock id's time.
    auto sid = e.id.substr(0, e.id.rfind('-'));
    if (auto dot = sid.find('.'); dot != std::string::npos) sid.erase(0, dot + 1);
    if (sid == core.info().id) refuse(errc::invalid_argument, "held by this session: unlock it");
    if (std::find(sessions.begin(), sessions.end(), sid) == sessions.end()) {
      // Idempotent: a retry after a lost reply finds the session already gone.
      if (auto r = retried(core, [&] { return core.backend().end_session(sid); }); !r) {
        detail::raise(r.error(), "dlock: force unlock '" + std::string(name) + "'");
      }
      sessions.push_back(sid);
    }
    ended.push_back(queue_entry{true, e.kind == detail::entry_kind::shared, e.token, e.owner,
                                e.since, e.lease_left, e.limit,
                                e.kind == detail::entry_kind::candidate});
  }
  return ended;
}

std::vector<std::string> list_locks(const session& s, std::string_view prefix) {
  if (!s)
    throw system_error(make_error_code(errc::invalid_argument), "dlock: list on an empty session");
  if (!s.capabilities().lists_names) {
    throw system_error(make_error_code(errc::unsupported),
                       "dlock: list locks: " + s.url() +
                           " cannot list lock names (its capabilities); ask about one name: "
                           "inspect(), dlock status NAME");
  }
  auto& core = *s.core();
  auto r = retried(core, [&] { return core.backend().lock_names(prefix); });
  if (!r) detail::raise(r.error(), "dlock: list locks");
  return std::move(*r);
}

}  // namespace dlock
