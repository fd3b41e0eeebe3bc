// dlock::election and dlock::leadership: the election over lock_handle (a candidate is a
// queue entry with a value; the head leads) and its observers over wait_change().
#include <algorithm>
#include <dlock/election.hpp>

#include "core/capability_refusals.hpp"
#include "core/hold_core.hpp"
#include "core/joined_stop.hpp"
#include "core/lock_handle.hpp"
#include "core/names.hpp"
#include "core/retry.hpp"
#include "core/session_core.hpp"
#include "core/url.hpp"
#include "core/verdict.hpp"

namespace dlock {
namespace {

using steady = std::chrono::steady_clock;

[[noreturn]] void refuse(errc code, const std::string& what) {
  throw system_error(make_error_code(code), "dlock: " + what);
}

// One listing of the election: its queue, and who leads in it. `settled` is false while the
// head is a candidate whose value is not yet set (between its two requests): observers
// wait that moment out rather than report a leader without a value.
struct reading {
  detail::queue_view queue;
  std::optional<leader_info> leader;
  bool settled{true};
};

// Once the session has ended, its end is what happened, whatever the request met on the way:
// a tester's observer of a stopped Redis said only "cancelled" when its lease ran out, and
// one on a closed etcd session "unavailable" (retryable) after 2 s instead of session_closed.
detail::failure cut_by_end(const detail::session_core& core, detail::failure f) {
  if (core.ended_token().stop_requested()) return core.ended_failure();
  return f;
}

reading read(detail::session_core& core, const std::string& name) {
  const auto context = "dlock: election '" + name + "'";
  if (core.forked())
    detail::raise({make_error_code(errc::invalid_argument), core.forked_message()}, context);
  if (core.ended_token().stop_requested()) detail::raise(core.ended_failure(), context);
  auto until = steady::now() + core.options().request_timeout;
  auto q = detail::with_retry(core.options().retry, until, core.ended_token(),
                              [&] { return core.backend().list(name); });
  if (!q) detail::raise(cut_by_end(core, q.error()), context);
  detail::read_recipes(q->entries);
  reading r{std::move(*q), std::nullopt, true};
  if (!r.queue.unlisted.empty() && r.queue.unlisted.front().before == 0) {
    // A holder the backend cannot name (Redlock: no candidate on a majority yet, a split
    // being resolved): no leader for sure; observers wait it out.
    r.settled = false;
    return r;
  }
  if (r.queue.entries.empty()) return r;
  const auto& head = r.queue.entries.front();
  if (head.kind != detail::entry_kind::candidate) {
    refuse(errc::invalid_argument,
           "election '" + name + "': the name is used as " +
               (head.kind == detail::entry_kind::permit ? "a semaphore" : "a lock") +
               (head.owner.empty() ? "" : " by " + head.owner) +
               ", not as an election (one name, one recipe)");
  }
  r.leader =
      leader_info{head.value, fencing_token{head.token}, head.version, head.owner, head.since};
  r.settled = head.version > 0;
  return r;
}

// A moved-from election has no session: its use is refused as a misuse, never a null
// dereference in the caller's process (nor "has no elections" of a backend that has them).
constexpr const char* election_moved_from = "this election object was moved from";

void check_values(const dlock::session& s, const std::string& name) {
  if (!s) refuse(errc::invalid_argument, election_moved_from);
  if (const auto caps = s.capabilities(); !caps.values) {
    refuse(errc::unsupported,
           "election '" + name + "': " + s.url() + " " + detail::lacks_elections(caps));
  }
}

}  // namespace

leadership::leadership() noexcept = default;
leadership::leadership(std::unique_ptr<detail::lock_handle> h, std::string value) noexcept
    : impl_(std::move(h)), value_(std::move(value)) {}
leadership::leadership(leadership&&) noexcept = default;
leadership& leadership::operator=(leadership&& other) noexcept {
  if (this != &other) {
    resign();
    impl_ = std::move(other.impl_);
    value_ = std::move(other.value_);
  }
  return *this;
}
leadership::~leadership() = default;  // the handle releases a hold it still has

leadership::operator bool() const noexcept { return impl_ && impl_->holds(); }
bool leadership::is_held() const noexcept {
  return impl_ && impl_->current() && impl_->current()->is_held();
}
fencing_token leadership::token() const {
  if (!*this)
    refuse(errc::not_held, "token() of no leadership (never granted, resigned, or moved from)");
  return impl_->current()->token();
}
std::stop_token leadership::lost_token() const noexcept {
  return *this ? impl_->current()->lost_token() : std::stop_token{};
}
std::chrono::steady_clock::time_point leadership::valid_until() const noexcept {
  return *this ? impl_->current()->valid_until() : std::chrono::steady_clock::time_point{};
}
dlock::hold leadership::hold() const noexcept {
  return *this ? dlock::hold(impl_->current()) : dlock::hold();
}
std::string leadership::name() const { return *this ? impl_->name() : std::string(); }

void leadership::proclaim(std::string_view value) {
  if (!*this)
    refuse(errc::not_held, "proclaim on no leadership (never granted, resigned, or moved from)");
  const auto& name = impl_->name();
  // A forked child's copy speaks with the parent's authority: refused as resign() is.
  if (impl_->session()->forked()) {
    detail::raise({make_error_code(errc::invalid_argument), impl_->session()->forked_message()},
                  "dlock: proclaim in election '" + name + "'");
  }
  if (value.size() > detail::max_value_size) {
    refuse(errc::invalid_argument, "election '" + name + "': a value of " +
                                       std::to_string(value.size()) + " bytes is over the " +
                                       std::to_string(detail::max_value_size) + "-byte limit");
  }
  // A leader that lost its lease must not speak for the term: the server refuses the entry's
  // value once it is gone, and this refuses it as soon as the loss is known here.
  if (!is_held()) refuse(errc::lock_lost, "election '" + name + "': leadership was lost");
  auto& core = *impl_->session();
  auto until = steady::now() + core.options().request_timeout;
  const auto& id = impl_->current()->entry_id();
  auto r = detail::with_retry(core.options().retry, until, impl_->current()->lost_token(),
                              [&] { return core.backend().set_value(name, id, value); });
  if (!r) detail::raise(r.error(), "dlock: proclaim in election '" + name + "'");
  value_ = std::string(value);
}

void leadership::resign() noexcept {
  std::error_code ec;
  resign(ec);
}
void leadership::resign(std::error_code& ec) noexcept {
  if (!*this) {
    ec = make_error_code(errc::not_held);
    return;
  }
  impl_->release(ec);
  impl_.reset();
}

election::election(dlock::session s, std::string_view name) : session_(std::move(s)), name_(name) {
  if (!session_) refuse(errc::invalid_argument, "election on an empty session");
  if (auto v = detail::validate_lock_name(name); !v) detail::raise(v.error(), "dlock");
}

leadership election::campaign(std::string_view value,
                              std::chrono::steady_clock::time_point deadline, std::stop_token stop,
                              std::error_code& ec) noexcept {
  if (!session_) {
    ec = make_error_code(errc::invalid_argument);
    detail::remember(detail::failure{ec, election_moved_from}, "dlock: campaign");
    return {};
  }
  try {
    auto h =
        std::make_unique<detail::lock_handle>(session_.core(), name_, detail::lock_type::mutex);
    if (!h->acquire(detail::entry_kind::candidate, deadline, std::move(stop), ec, nullptr, value))
      return {};
    return leadership(std::move(h), std::string(value));
  } catch (const std::bad_alloc&) {
    ec = std::make_error_code(std::errc::not_enough_memory);
    return {};
  }
}

leadership election::try_campaign_until(std::string_view value,
                                        std::chrono::steady_clock::time_point deadline) {
  if (!session_) refuse(errc::invalid_argument, std::string("campaign: ") + election_moved_from);
  auto h = std::make_unique<detail::lock_handle>(session_.core(), name_, detail::lock_type::mutex);
  std::error_code ec;
  std::string msg;
  if (h->acquire(detail::entry_kind::candidate, deadline, {}, ec, &msg, value)) {
    return leadership(std::move(h), std::string(value));
  }
  if (ec == errc::would_block || ec == errc::timed_out) return {};
  detail::raise(detail::failure{ec, msg}, "dlock: campaign in election '" + name_ + "' on " +
                                              detail::url_in_text(session_.url()));
}

leadership election::campaign(std::string_view value) {
  return try_campaign_until(value, std::chrono::steady_clock::time_point::max());
}

std::optional<leader_info> election::leader() const {
  check_values(session_, name_);
  auto& core = *session_.core();
  auto r = read(core, name_);
  if (!r.settled) {
    // A candidate between its two requests: its value follows within a round trip.
    auto until = steady::now() + core.options().request_timeout;
    (void)core.backend().wait_change(name_, r.queue, until, core.ended_token());
    r = read(core, name_);
  }
  return r.leader;
}

std::optional<leader_info> election::next_change(const std::optional<leader_info>& seen,
                                                 std::chrono::steady_clock::time_point deadline,
                                                 std::stop_token stop) const {
  check_values(session_, name_);
  auto& core = *session_.core();
  // The wait ends on the caller's stop or the session's end (read() then reports the end).
  detail::joined_stop joined(stop, core.ended_token());
  for (int failures = 0;;) {
    auto r = read(core, name_);
    if (r.settled && r.leader != seen) return r.leader;
    if (stop.stop_requested() || steady::now() >= deadline) return seen;
    // Read again at least once a TTL: a backend whose watch waits out an outage without a
    // word (etcd's gRPC stream reconnects for ever) kept a tester's `dlock observe` on its
    // last view for 10 minutes. The read fails after its retries instead, as a watcher is
    // promised (the CLI exits 69).
    const auto until = std::min(deadline, steady::now() + core.info().ttl);
    auto w = core.backend().wait_change(name_, r.queue, until, joined.token());
    if (!w) {
      if (!detail::is_transient(w.error()) || core.ended_token().stop_requested()) {
        detail::raise(cut_by_end(core, w.error()), "dlock: observe election '" + name_ + "'");
      }
      detail::backoff_sleep(core.options().retry, failures++, deadline, joined.token());
    }
  }
}

void election::observe(const std::function<void(const std::optional<leader_info>&)>& on_change,
                       std::stop_token stop) const {
  auto seen = leader();
  on_change(seen);
  while (!stop.stop_requested()) {
    auto next = next_change(seen, steady::time_point::max(), stop);
    if (stop.stop_requested() && next == seen) return;
    seen = std::move(next);
    on_change(seen);
  }
}

}  // namespace dlock
