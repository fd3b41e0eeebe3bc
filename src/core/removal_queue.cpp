#include "core/removal_queue.hpp"

#include <algorithm>
#include <atomic>

#include "core/caller_deadline.hpp"
#include "core/exit_guard.hpp"
#include "core/retry.hpp"

namespace dlock::detail {

namespace {
std::atomic<std::uint64_t> inline_attempts{0};
std::atomic<std::uint64_t> handed_off{0};
// One background attempt's wait for a busy same-host store (see remover_loop).
constexpr std::chrono::milliseconds same_host_attempt{250};
}  // namespace

removal_counts removal_stats() noexcept { return {inline_attempts.load(), handed_off.load()}; }

bool removal_ticket::wait_until(steady::time_point until) {
  std::unique_lock lk(mu_);
  return cv_.wait_until(lk, until, [&] { return settled_; });
}

bool removal_ticket::settled() const {
  std::lock_guard lk(mu_);
  return settled_;
}

bool removal_ticket::was_absent() const {
  std::lock_guard lk(mu_);
  return absent_;
}

bool removal_ticket::refused() const {
  std::lock_guard lk(mu_);
  return refused_;
}

std::optional<failure> removal_ticket::last_error() const {
  std::lock_guard lk(mu_);
  return last_;
}

bool removal_ticket::ended_unconfirmed() const {
  std::lock_guard lk(mu_);
  return unconfirmed_;
}

void removal_ticket::settle(bool absent, bool unconfirmed) {
  std::lock_guard lk(mu_);
  if (settled_) return;
  settled_ = true;
  absent_ = absent;
  unconfirmed_ = unconfirmed;
  cv_.notify_all();
}

void removal_ticket::note(failure f) {
  std::lock_guard lk(mu_);
  last_ = std::move(f);
}

void removal_ticket::refuse(failure f) {
  std::lock_guard lk(mu_);
  if (settled_) return;
  last_ = std::move(f);
  settled_ = true;
  refused_ = true;
  cv_.notify_all();
}

// Settles `t` where an attempt's answer is final: removed (or the session closed, whose close
// removes it), or gone with the lease. False when a retry has something left to do.
bool removal_queue::settles(const result<void>& r, removal_ticket& t) {
  const auto code = r ? std::error_code{} : r.error().code;
  if (r || code == make_error_code(errc::session_closed)) {
    t.settle(false);
    return true;
  }
  if (code == make_error_code(errc::lock_lost) || code == make_error_code(errc::session_expired)) {
    t.settle(true);
    return true;
  }
  return false;
}

std::shared_ptr<removal_ticket> removal_queue::submit(
    std::string lock, std::string entry_id, std::optional<steady::time_point> caller_deadline) {
  auto ticket = std::make_shared<removal_ticket>();
  int attempt = 0;
  const auto caps = backend_.caps();
  // An in-process or same-host store cannot be cut off by a network, so its removal cannot
  // hang (SQLite waits at most its busy timeout, request_timeout, behind a stopped writer).
  // A network backend's can, unless the backend bounds it by the caller's deadline. Either
  // way the first attempt runs here, without the hand-off to a remover thread, which cost
  // more than the removal itself (SQLite's uncontended cycle went from 95 to 190 us at the
  // median with it; a Redis lock+unlock cycle fell to about 0.8x).
  // With no caller deadline nobody waits for the answer (the session has ended, or the hold
  // was known lost): only an in-process store's, which never waits, runs here. A waiter failed
  // by close() on SQLite waited out the busy timeout (5 s) behind a stopped writer.
  const bool same_host = caps.scope != reach::network;
  if (caller_deadline ? same_host || caps.bounded_remove : caps.scope == reach::process) {
    {
      std::lock_guard lk(mu_);
      if (closed_) {
        ticket->settle(false);  // the backend's close removes every entry of the session
        return ticket;
      }
    }
    inline_attempts.fetch_add(1, std::memory_order_relaxed);
    // A same-host store's wait for a busy file ends at the caller's deadline too; the
    // remover threads retry what it left.
    std::optional<caller_deadline_scope> bounded;
    if (caller_deadline) bounded.emplace(*caller_deadline);
    auto r = same_host ? backend_.remove(lock, entry_id)
                       : backend_.remove_until(lock, entry_id, *caller_deadline);
    if (!same_host) unreachable_hint_ = !r && is_transient(r.error());
    if (settles(r, *ticket)) return ticket;
    // Refused for good (a ZooKeeper ACL without DELETE): retrying would keep the entry, and
    // so the lock, for as long as the session lives. The handler ends the session.
    if (backend_.refusal_is_final(r.error())) {
      ticket->refuse(r.error());
      if (on_refused_) on_refused_(r.error(), caller_deadline);
      return ticket;
    }
    // Cut off at the deadline or failed: the entry may still be there. The remover threads
    // take over, and theirs are retries: a lock_lost then may be this attempt's unconfirmed
    // success, not a loss.
    ticket->note(r.error());
    attempt = 1;
  }
  handed_off.fetch_add(1, std::memory_order_relaxed);
  std::unique_lock lk(mu_);
  if (closed_) {
    ticket->settle(false);  // the backend's close removes every entry of the session
    return ticket;
  }
  // A few threads, started on demand: a removal stuck on a dead link does not hold up the
  // others, and releases of many locks at once do not queue behind one another.
  if (idle_ == 0 && removers_.size() < 4) {
    try {
      removers_.emplace_back([this](std::stop_token st) { remover_loop(st); });
    } catch (...) {
      if (removers_.empty() && attempt == 0) {
        // No thread to be had (a process at its thread limit): removed here, on the caller's
        // thread, once. Thrown out, the removal was never queued, and the entry, so the lock,
        // stayed for as long as the session lived (a tester's unlock said only "the backend
        // reported an error"). What this attempt leaves waits for a thread, as below.
        lk.unlock();
        std::optional<caller_deadline_scope> bounded;
        if (caller_deadline) bounded.emplace(*caller_deadline);
        auto r = backend_.remove(lock, entry_id);
        if (settles(r, *ticket)) return ticket;
        ticket->note(r.error());
        attempt = 1;
        lk.lock();
        if (closed_) {
          ticket->settle(false);
          return ticket;
        }
      }
    }
  }
  jobs_.push_back({std::move(lock), std::move(entry_id), ticket, attempt, steady::now()});
  ++gen_;
  cv_.notify_one();
  return ticket;
}

void removal_queue::remover_loop(std::stop_token stop) {
  std::unique_lock lk(mu_);
  while (!stop.stop_requested()) {
    auto gen = gen_;
    auto it = std::min_element(jobs_.begin(), jobs_.end(),
                               [](const auto& a, const auto& b) { return a.next < b.next; });
    auto now = steady::now();
    if (it == jobs_.end() || it->next > now) {
      ++idle_;
      if (it == jobs_.end()) {
        cv_.wait(lk, stop, [&] { return gen_ != gen; });
      } else {
        const auto until = it->next;  // a copy: the queue may change while we wait
        cv_.wait_until(lk, stop, until, [&] { return gen_ != gen; });
      }
      --idle_;
      continue;
    }
    auto j = std::move(*it);
    jobs_.erase(it);
    if (exit_guard::exiting()) {
      j.ticket->settle(false);  // the host is leaving: the lease frees the entry
      continue;
    }
    lk.unlock();
    auto r = [&] {
      exit_guard::background_call during;
      // A same-host store waits for a busy file while holding its session's one connection:
      // short attempts leave it to the session's other calls (a listing, the close) between
      // retries, instead of a request timeout each behind another process's write lock.
      std::optional<caller_deadline_scope> bounded;
      if (backend_.caps().scope != reach::network)
        bounded.emplace(steady::now() + same_host_attempt);
      return backend_.remove(j.lock, j.id);
    }();
    lk.lock();
    unreachable_hint_ = !r && is_transient(r.error());
    if (r) {
      j.ticket->settle(false);
      continue;
    }
    const auto& code = r.error().code;
    if (code == make_error_code(errc::lock_lost) ||
        code == make_error_code(errc::session_expired)) {
      // Proof that the entry is gone. Only a first attempt can call it "not ours any more":
      // a retry cannot tell its own earlier, unacknowledged success from a loss. A retry
      // stopped by the end of our lease confirmed nothing: the entry is dead, not removed.
      j.ticket->settle(j.attempt == 0,
                       j.attempt > 0 && code == make_error_code(errc::session_expired));
      continue;
    }
    if (code == make_error_code(errc::session_closed) || closed_) {
      j.ticket->settle(false);
      continue;
    }
    if (backend_.refusal_is_final(r.error())) {
      auto f = r.error();
      j.ticket->refuse(f);
      lk.unlock();  // the handler closes the session, and with it this queue
      if (on_refused_) on_refused_(f, std::nullopt);
      lk.lock();
      continue;
    }
    // Anything else may have left the entry in place: try again soon (job::pace).
    j.ticket->note(r.error());
    j.next = steady::now() + j.pace.next();
    ++j.attempt;
    jobs_.push_back(std::move(j));
    ++gen_;
  }
}

void removal_queue::close() noexcept {
  std::vector<job> dropped;
  {
    std::lock_guard lk(mu_);
    closed_ = true;
    dropped.swap(jobs_);
    for (auto& t : removers_) t.request_stop();
  }
  cv_.notify_all();
  for (auto& j : dropped) j.ticket->settle(false);
}

void removal_queue::join() noexcept {
  std::vector<std::jthread> removers;
  {
    std::lock_guard lk(mu_);
    removers.swap(removers_);
  }
  for (auto& t : removers) {
    if (t.joinable()) t.join();
  }
}

}  // namespace dlock::detail
