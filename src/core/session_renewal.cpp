// A session's two background threads: the renewal of its lease every keepalive interval, and
// the monitor that ends the lease on this client's clock when renewals stop succeeding.
#include <algorithm>
#include <chrono>
#include <string>

#include "core/duration.hpp"
#include "core/events.hpp"
#include "core/exit_guard.hpp"
#include "core/session_core.hpp"

namespace dlock::detail {

void session_core::renew_loop(std::stop_token stop) {
  auto next = steady::now() + interval_;
  while (!stop.stop_requested()) {
    try {
      if (!renew_round(stop, next)) return;
    } catch (...) {
      // Out of memory inside a renewal (std::bad_alloc building a statement), or anything a
      // backend or an observer threw, is a failed round, never the host's end: escaping this
      // thread called std::terminate (a tester's process died at its next renewal when memory
      // ran short, on every backend). The monitor still ends the lease on time.
      renew_sent_.store(0);
      next = steady::now() + std::max(info_.ttl / 10, std::chrono::milliseconds{20});
      try {
        on_suspect();
      } catch (...) {  // the holds' own clock check still tells them
      }
    }
  }
}

// One wait and renewal; false when the loop is over.
bool session_core::renew_round(std::stop_token& stop, steady::time_point& next) {
  {
    std::unique_lock lk(mu_);
    wake_.wait_until(lk, stop, next, [] { return false; });
  }
  if (stop.stop_requested() || ended_.stop_requested() || exit_guard::exiting()) return false;
  const auto started = steady::now();
  renew_sent_.store(started.time_since_epoch().count());
  auto r = [&] {
    exit_guard::background_call during;
    return backend_->keep_alive();
  }();
  renew_sent_.store(0);
  if (exit_guard::exiting()) return false;  // interrupted by the host's exit: no verdict
  auto now = steady::now();
  if (r) {
    {
      std::lock_guard lk(why_mu_);
      renew_failed_.clear();
    }
    on_renewal(*r);
    // From the round's start: a slow round (a check after the renewal, a reply held up by an
    // election) must not push the next one towards the lease's end.
    next = started + interval_;
  } else if (r.error().code == make_error_code(errc::session_expired)) {
    // The holds' loss signal says that they ended; this says why (the backend knows). Kept
    // for ended_failure() too: a session another client ended read "its lease ran out".
    emit(options_.observer, [&](observer& o) { o.on_log(log_level::error, r.error().message); });
    {
      std::lock_guard lk(why_mu_);
      if (ended_why_.empty()) ended_why_ = "it ended: " + r.error().message;
    }
    expire();
    return false;
  } else {
    {
      std::lock_guard lk(why_mu_);
      renew_failed_ = r.error().message;
    }
    emit(options_.observer, [&](observer& o) {
      o.on_log(log_level::warning, "renewing the lease failed (retrying): " + r.error().message);
    });
    on_suspect();
    auto retry_in = std::max(info_.ttl / 10, std::chrono::milliseconds{20});
    next = now + std::min(interval_, retry_in);
  }
  return true;
}

std::string session_core::lease_ran_out_why() const {
  std::string why = "its lease ran out";
  if (auto sent = renew_sent_.load(); sent != 0) {
    const auto waited = steady::now() - steady::time_point(steady::duration(sent));
    why += " while a renewal waited " +
           format_duration(std::chrono::duration_cast<std::chrono::milliseconds>(waited)) +
           " for an answer";
  }
  if (!renew_failed_.empty()) why += "; the last renewal failed: " + renew_failed_;
  return why;
}

void session_core::monitor_loop(std::stop_token stop) {
  while (!stop.stop_requested()) {
    // Once the session ended, only what expire() could not tell (out of memory) keeps this
    // thread: it tells it again every 50 ms until it is told (a tester's holds under memory
    // pressure stayed `held`, their lost_token() never fired).
    const bool ended = end_done_.load();
    if (ended && !loss_untold_ && !state_untold_) return;
    auto deadline = ended ? steady::now() + std::chrono::milliseconds{50} : lease_deadline();
    {
      std::unique_lock lk(mu_);
      wake_.wait_until(lk, stop, deadline, [] { return false; });
    }
    if (stop.stop_requested()) return;
    if (ended) {
      retell_end();
    } else if (steady::now() >= lease_deadline()) {
      // Said where the session's end is reported (ended_failure): a watcher's request cut
      // short by it otherwise told only "cancelled" or "expired", not that the backend was
      // not answering.
      try {
        std::lock_guard lk(why_mu_);
        if (ended_why_.empty()) ended_why_ = lease_ran_out_why();
      } catch (...) {  // out of memory: the end matters, not its explanation
      }
      expire();
    }
  }
}

}  // namespace dlock::detail
