#include "core/removal_queue.hpp"

#include <algorithm>
#include <random>

#include "core/retry.hpp"

namespace dlock::detail {

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

std::optional<failure> removal_ticket::last_error() const {
  std::lock_guard lk(mu_);
  return last_;
}

void removal_ticket::settle(bool absent) {
  std::lock_guard lk(mu_);
  if (settled_) return;
  settled_ = true;
  absent_ = absent;
  cv_.notify_all();
}

void removal_ticket::note(failure f) {
  std::lock_guard lk(mu_);
  last_ = std::move(f);
}

std::shared_ptr<removal_ticket> removal_queue::submit(std::string lock, std::string entry_id) {
  auto ticket = std::make_shared<removal_ticket>();
  int attempt = 0;
  if (backend_.caps().scope != reach::network) {
    // An in-process or same-host store cannot be cut off by a network, so its removal cannot
    // hang (SQLite waits at most its busy timeout, request_timeout, behind a stopped writer):
    // done here, without the hand-off to a remover thread, which cost more than the removal
    // itself (SQLite's uncontended cycle went from 95 to 190 us at the median with it).
    auto r = backend_.remove(lock, entry_id);
    const auto code = r ? std::error_code{} : r.error().code;
    if (r || code == make_error_code(errc::session_closed)) {
      ticket->settle(false);
      return ticket;
    }
    if (code == make_error_code(errc::lock_lost) ||
        code == make_error_code(errc::session_expired)) {
      ticket->settle(true);
      return ticket;
    }
    ticket->note(r.error());
    attempt = 1;
  }
  std::lock_guard lk(mu_);
  if (closed_) {
    ticket->settle(false);  // the backend's close removes every entry of the session
    return ticket;
  }
  jobs_.push_back({std::move(lock), std::move(entry_id), ticket, attempt, steady::now()});
  ++gen_;
  // A few threads, started on demand: a removal stuck on a dead link does not hold up the
  // others, and releases of many locks at once do not queue behind one another.
  if (idle_ == 0 && removers_.size() < 4) {
    try {
      removers_.emplace_back([this](std::stop_token st) { remover_loop(st); });
    } catch (...) {
      if (removers_.empty()) throw;
    }
  }
  cv_.notify_one();
  return ticket;
}

void removal_queue::remover_loop(std::stop_token stop) {
  thread_local std::minstd_rand rng{std::random_device{}()};
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
    lk.unlock();
    auto r = backend_.remove(j.lock, j.id);
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
      // a retry cannot tell its own earlier, unacknowledged success from a loss.
      j.ticket->settle(j.attempt == 0);
      continue;
    }
    if (code == make_error_code(errc::session_closed) || closed_) {
      j.ticket->settle(false);
      continue;
    }
    // Anything else may have left the entry in place: try again soon. Backoff from a few ms
    // (not the renewal period), capped low, so a healed link frees the lock at once.
    j.ticket->note(r.error());
    long long us = std::min(5'000LL << std::min(j.attempt, 6), 250'000LL);
    j.next = steady::now() +
             std::chrono::microseconds{std::uniform_int_distribution<long long>(us / 2, us)(rng)};
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
