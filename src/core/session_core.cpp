#include "core/session_core.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <random>
#include <system_error>
#include <thread>

#include "core/caller_deadline.hpp"
#include "core/doctor.hpp"
#include "core/duration.hpp"
#include "core/events.hpp"
#include "core/exit_guard.hpp"
#include "core/hold_core.hpp"
#include "core/observed_backend.hpp"
#include "core/open_budget.hpp"
#include "core/pid_namespace.hpp"
#include "core/registry.hpp"
#include "core/retry.hpp"
#include "core/session_options_check.hpp"

namespace dlock::detail {
namespace {

std::string random_hex64() {
  std::random_device rd;
  std::uint64_t v = (std::uint64_t{rd()} << 32) ^ rd();
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

std::string owner_text(const std::string& description) {
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) != 0) std::snprintf(host, sizeof host, "unknown");
  std::string s = std::string(host) + " pid=" + std::to_string(getpid());
  // In a nested PID namespace (a container sharing the host's name) the pid means another
  // process outside it: viewers judge it only from this namespace (cli/queue_format.cpp).
  if (const auto ns = pid_namespace(); ns != 0 && ns != initial_pid_namespace) {
    s += " pidns=" + std::to_string(ns);
  }
  if (!description.empty()) s += " " + description;
  return s;
}

}  // namespace

result<std::shared_ptr<session_core>> session_core::open(std::string_view text,
                                                         const session_options& options) {
  auto u = parse_url(text);
  if (!u) return fail(u.error());
  auto o = apply_query(*u, options);
  if (!o) return fail(errc::invalid_argument, "URL '" + u->redacted + "': " + o.error().message);
  session_info info{random_hex64(),  owner_text(o->description),
                    o->ttl,          o->request_timeout,
                    o->observe_only, o->ttl.given()};
  std::shared_ptr<session_core> s(new session_core(std::move(*u), std::move(*o), std::move(info)),
                                  &session_core::destroy);
  // The backend (its plug-in loaded) before the retries: a backend that is not installed
  // stays so however long open_timeout is.
  auto opener = find_backend(s->url_);
  if (!opener) return fail(opener.error());
  auto started = steady::now();
  auto budget =
      s->options_.open_timeout.count() > 0 ? s->options_.open_timeout : s->options_.request_timeout;
  auto deadline = started + budget;
  int attempts = 0;
  // An open_timeout the caller chose is the time it gives a server to come back (a restart,
  // a proxy down for seconds): transient failures are retried until it passes, past the
  // policy's attempts, as an acquire with a deadline is. The default keeps the policy's bound.
  const auto patience = s->options_.open_timeout.count() > 0 ? deadline : started;
  // The lease is counted from the attempt that made the session (the server made it after
  // this), not from the first: an open that waited out a restart got a lease already spent,
  // and a tester's `dlock run -w` was granted and lost at once as the server came back.
  auto attempt_started = started;
  auto b = with_patient_retry(s->options_.retry, deadline, patience, {}, [&] {
    ++attempts;
    attempt_started = steady::now();
    open_attempt_scope scope(deadline);  // each connect of this attempt: at most what is left
    // And every request of it: a Redis that answered the login and then went silent held an
    // open 15 s (three requests of 5 s each), whatever open_timeout or `-w` said (a tester's).
    caller_deadline_scope requests(deadline);
    return (*opener)(s->url_, s->info_);
  });
  if (!b) {
    auto f = b.error();
    if (is_transient(f)) {
      auto took = std::chrono::duration_cast<std::chrono::milliseconds>(steady::now() - started);
      f.message += " (" + std::to_string(attempts) + (attempts == 1 ? " attempt" : " attempts") +
                   " in " + std::to_string(took.count()) + " ms)";
    }
    return fail(std::move(f));
  }
  s->backend_ = std::move(*b);
  if (s->options_.observer) {
    s->backend_ = observe_requests(std::move(s->backend_), s->options_.observer);
  }
  if (auto g = s->backend_->granted_ttl()) {
    // Checked against the TTL asked before the open; a server that granted less (ZooKeeper's
    // maxSessionTimeout) would see every renewal come after the lease ended: a tester's
    // ttl=60s&keepalive=45s lost every hold at 40 s, with no fault.
    const auto keepalive = s->options_.keepalive_interval;
    if (keepalive.count() > 0 && keepalive >= *g) {
      return fail(errc::invalid_argument,
                  "URL '" + s->url_.redacted + "': keepalive " + format_duration(keepalive) +
                      " is not below the TTL the server granted, " + format_duration(*g) + " (" +
                      format_duration(s->info_.ttl) +
                      " asked): every renewal would come after the lease ended; ask a keepalive "
                      "below it, or leave keepalive out (a third of the TTL granted)");
    }
    if (*g != s->info_.ttl) {
      // Said at once, not only by session::ttl(): a holder that plans its work by the TTL it
      // asked for (etcd raises 10 ms to its minimum lease, 2 s; ZooKeeper clamps to its
      // min/maxSessionTimeout) should hear the lease it has (a tester's silent 10 ms -> 2 s).
      emit(s->options_.observer, [&](observer& o) {
        o.on_log(log_level::warning, "URL '" + s->url_.redacted +
                                         "': the server granted a TTL of " + format_duration(*g) +
                                         ", not the " + format_duration(s->info_.ttl) + " asked");
      });
    }
    s->info_.ttl = *g;
  }
  // One attempt can itself wait out an outage (the ZooKeeper client retries inside it until a
  // server answers), far from when the session was made: a tester's `dlock run -w 30s
  // --ttl 3s` started while ZooKeeper was down lost its lease as soon as it was granted. An
  // open that took a good part of a lease renews once at once and counts from that.
  auto lease_from = attempt_started;
  if (steady::now() - attempt_started > s->info_.ttl / 4) {
    if (auto r = s->backend_->keep_alive()) lease_from = std::max(lease_from, *r);
  }
  s->lease_deadline_.store(s->deadline_from(lease_from).time_since_epoch().count());
  try {
    s->start();
  } catch (const std::system_error& e) {  // no thread to be had: said, not a bare errno text
    return fail(errc::backend_unavailable,
                "cannot start the session's renewal threads (" + std::string(e.what()) +
                    "): the process is at its thread limit (ulimit -u, cgroup pids.max)");
  }
  exit_guard::track(s);
  // What weakens a guarantee here (no persistence, asynchronous replicas, ...) is told to an
  // installed observer at once, not only to whoever runs `dlock doctor`; without one, no
  // round trip is spent on it. A check that fails is no reason to fail the open.
  if (s->options_.observer) {
    if (auto f = s->backend_->diagnose()) log_findings(s->options_.observer, *f);
  }
  return s;
}

session_core::session_core(url u, session_options o, session_info info)
    : url_(std::move(u)), options_(std::move(o)), info_(std::move(info)) {}

session_core::~session_core() {
  // Normally finished by close() or destroy() already; this covers neither having run.
  if (begin_close()) finish_close();
}

void session_core::start() {
  removals_ = std::make_unique<removal_queue>(
      *backend_, [this](const failure& f, std::optional<steady::time_point> until) {
        end_after_refusal(f, until);
      });
  interval_ = options_.keepalive_interval.count() > 0
                  ? options_.keepalive_interval
                  : std::max(info_.ttl / 3, std::chrono::milliseconds{1});
  backend_->set_event_handler([this](session_event e) {
    if (e == session_event::suspended)
      on_suspect();
    else if (e == session_event::reconnected)
      on_renewal(steady::now());
    else {
      // As a renewal's session_expired is logged: the holds' loss signal says that, this why.
      if (auto why = backend_->end_reason(); !why.empty() && !ended_.stop_requested()) {
        emit(options_.observer, [&](observer& o) { o.on_log(log_level::error, why); });
        std::lock_guard lk(why_mu_);
        if (ended_why_.empty()) ended_why_ = why;
      }
      expire();
    }
  });
  renewer_ = std::jthread([this](std::stop_token st) { renew_loop(st); });
  renewer_stop_ = renewer_.get_stop_source();
  monitor_ = std::jthread([this](std::stop_token st) { monitor_loop(st); });
}

std::string session_core::next_entry_id() { return backend_->entry_id(info_.id, ++entry_counter_); }

steady::time_point session_core::deadline_from(steady::time_point sent) const noexcept {
  // Redlock's drift allowance: 1% of the TTL plus 2 ms for clock-rate differences.
  auto drift = info_.ttl / 100 + std::chrono::milliseconds{2};
  return sent + info_.ttl - drift;
}

steady::time_point session_core::lease_deadline() const noexcept {
  return steady::time_point{steady::duration{lease_deadline_.load()}};
}

failure session_core::ended_failure() const {
  if (state_.load() == session_state::closed) {
    return {make_error_code(errc::session_closed), "session to " + url_.redacted + " is closed"};
  }
  std::string why;
  {
    std::lock_guard lk(why_mu_);
    why = ended_why_;
  }
  return {make_error_code(errc::session_expired), "session " + info_.id + " to " + url_.redacted +
                                                      " expired" +
                                                      (why.empty() ? "" : " (" + why + ")")};
}

void session_core::add_hold(const std::shared_ptr<hold_core>& h) {
  std::lock_guard lk(mu_);
  holds_[h.get()] = h;  // overwrite: a dead hold may have left its address behind
}

void session_core::remove_hold(const hold_core* h) {
  std::lock_guard lk(mu_);
  holds_.erase(h);
}

std::size_t session_core::add_state_callback(std::function<void(session_state)> cb) {
  std::lock_guard lk(mu_);
  callbacks_.emplace(next_callback_, std::move(cb));
  return next_callback_++;
}

void session_core::remove_state_callback(std::size_t key) {
  std::lock_guard lk(mu_);
  callbacks_.erase(key);
}

std::shared_ptr<removal_ticket> session_core::remove_in_background(
    std::string lock, std::string entry_id, std::optional<steady::time_point> caller_deadline) {
  return removals_->submit(std::move(lock), std::move(entry_id), caller_deadline);
}

void session_core::on_renewal(steady::time_point sent) {
  if (ended_.stop_requested()) return;  // a lapsed lease is never revived
  if (sent >= lease_deadline()) {
    // Sent after the lease had already lapsed on our clock (e.g. the process was paused and
    // this thread ran before the monitor): the server may have granted the lock to someone
    // else meanwhile, whatever this renewal says (a ZooKeeper client can still look
    // connected right after SIGCONT). Never extend: the lease is lost.
    expire();
    return;
  }
  auto d = deadline_from(sent).time_since_epoch().count();
  auto cur = lease_deadline_.load();
  while (cur < d && !lease_deadline_.compare_exchange_weak(cur, d)) {
  }
  auto expected = session_state::suspended;
  if (state_.compare_exchange_strong(expected, session_state::live)) {
    notify_holds(hold_state::held);
    set_state(session_state::live);
  }
}

void session_core::on_suspect() {
  auto expected = session_state::live;
  if (state_.compare_exchange_strong(expected, session_state::suspended)) {
    notify_holds(hold_state::suspect);
    set_state(session_state::suspended);
  }
}

void session_core::expire() {
  auto cur = state_.load();
  do {
    if (cur == session_state::expired || cur == session_state::closed) return;
  } while (!state_.compare_exchange_weak(cur, session_state::expired));
  ended_.request_stop();
  // Holds are told first, then the backend cuts its connections: where a connection is the
  // session (MariaDB, PostgreSQL's advisory mode), cutting it frees the locks on the server,
  // and a tester's waiter was granted 1.5 ms before the holder heard it was lost.
  // Nothing thrown here (out of memory, an observer's or a callback's exception) may keep the
  // connections from being cut, the waiters from waking, or escape a dlock thread.
  // What could not be told (out of memory) the monitor tells again until it is (retell_end);
  // meanwhile each hold's is_held() reads the lease's end off the clock.
  try {
    notify_holds(hold_state::lost);
  } catch (...) {
    loss_untold_ = true;
  }
  if (backend_) backend_->on_expired();
  try {
    set_state(session_state::expired);
  } catch (...) {
    state_.store(session_state::expired);
    state_untold_ = true;
  }
  end_done_ = true;
  wake_.notify_all();
}

void session_core::retell_end() {
  if (loss_untold_.exchange(false)) {
    try {
      notify_holds(hold_state::lost);  // the holds told already are passed over
    } catch (...) {
      loss_untold_ = true;
    }
  }
  if (state_untold_.exchange(false)) {
    try {
      set_state(session_state::expired);
    } catch (...) {
      state_untold_ = true;
    }
  }
}

void session_core::set_state(session_state s) {
  state_.store(s);
  emit(options_.observer, [&](observer& o) { o.on_session_state(s); });
  std::vector<std::function<void(session_state)>> cbs;
  {
    std::lock_guard lk(mu_);
    for (auto& [k, cb] : callbacks_) cbs.push_back(cb);
  }
  for (auto& cb : cbs) cb(s);
}

void session_core::notify_holds(hold_state s) {
  std::vector<std::shared_ptr<hold_core>> live;
  {
    std::lock_guard lk(mu_);
    for (auto& [key, w] : holds_) {
      if (auto p = w.lock()) live.push_back(std::move(p));
    }
  }
  for (auto& h : live) {
    auto before = h->state();
    h->set_state(s);
    if (h->state() == before || !options_.observer) continue;
    emit(options_.observer, [&](observer& o) { o.on_hold_state(h->name(), h->token(), s); });
  }
}

}  // namespace dlock::detail
