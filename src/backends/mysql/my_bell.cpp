#include "backends/mysql/my_bell.hpp"

#include <algorithm>
#include <cstdio>
#include <optional>
#include <utility>

#include "backends/mysql/my_bell_open.hpp"
#include "backends/mysql/my_schema.hpp"

namespace dlock::detail::my {

using std::chrono::milliseconds;

bells::bells(target t, milliseconds request_timeout, milliseconds longest, std::size_t max_conns)
    : target_(std::move(t)),
      request_timeout_(request_timeout),
      longest_(longest),
      max_conns_(max_conns) {
  target_.read_timeout = longest_ + request_timeout_;
}

std::unique_ptr<conn> bells::borrow(std::uint64_t token, bool& full,
                                    std::chrono::steady_clock::time_point until,
                                    const std::stop_token& stop) {
  full = false;
  {
    std::lock_guard lk(mu_);
    if (closed_) return nullptr;
    if (!first_locked(token)) {
      full = true;  // a wait nearer its queue's head is waiting for a connection
      return nullptr;
    }
    while (!idle_.empty()) {
      auto c = std::move(idle_.back());
      idle_.pop_back();
      // The server may have ended an idle one (wait_timeout, a restart, KILL).
      if (c->usable() && !c->peer_closed()) return c;
      --open_;
    }
    if (open_ >= max_conns_) {
      full = true;
      return nullptr;
    }
    ++open_;
  }
  // A server that stops answering while a waiter opens its doorbell must not hold the waiter
  // past its deadline, its stop or the pool's close (CI-18: 11 s for a 1.5 s wait; CI-46: 7 s).
  if (auto c = open_aside(target_, request_timeout_, until, stop, closing_.get_token())) return c;
  std::lock_guard lk(mu_);
  --open_;
  return nullptr;
}

void bells::give_back(std::unique_ptr<conn> c) {
  {
    std::lock_guard lk(mu_);
    ++returns_;
    if (closed_ || !c->usable()) {
      --open_;  // the pointer closes it
    } else {
      idle_.push_back(std::move(c));
    }
  }
  returned_.notify_all();  // the wait nearest its head takes it
}

bool bells::wait_slot(std::uint64_t token, std::chrono::steady_clock::time_point until,
                      const std::stop_token& stop) {
  std::unique_lock lk(mu_);
  const auto seen = returns_;
  auto me = queued_.insert(token);
  bool got = returned_.wait_until(
      lk, stop, until, [&] { return closed_ || (returns_ != seen && me == queued_.begin()); });
  queued_.erase(me);
  if (!got) returned_.notify_all();  // the next one may go now
  return got && !closed_;
}

bells::rung bells::wait(const std::string& entry_id, std::uint64_t token,
                        std::chrono::steady_clock::time_point until, const std::stop_token& stop) {
  if (stop.stop_requested()) return rung::stopped;
  bool full = false;
  auto c = borrow(token, full, until, stop);
  if (!c) {
    if (full) return rung::full;
    if (stop.stop_requested()) return rung::stopped;
    return std::chrono::steady_clock::now() >= until ? rung::timed_out : rung::no_bell;
  }
  auto left = std::chrono::duration_cast<milliseconds>(until - std::chrono::steady_clock::now());
  left = std::min(left, longest_);
  // MariaDB times GET_LOCK in fractions of a second; MySQL in whole seconds, so there a wait
  // under one second is left to the caller's polling rather than overrun.
  char secs[32];
  if (c->mariadb()) {
    std::snprintf(secs, sizeof secs, "%.3f", static_cast<double>(left.count()) / 1000.0);
  } else {
    std::snprintf(secs, sizeof secs, "%lld", static_cast<long long>(left.count() / 1000));
  }
  if (left.count() <= 0 || (!c->mariadb() && left < std::chrono::seconds{1})) {
    give_back(std::move(c));
    return left.count() <= 0 ? rung::timed_out : rung::no_bell;
  }
  auto cut = c->interrupter();
  bool late = false;
  result<outcome> r = [&] {
    std::stop_callback on_stop(stop, [&cut] { cut->interrupt(); });
    // The server answers when the GET_LOCK's own time is up; one that does not (paused, or
    // its route black-holed) would hold the caller until the read timeout, `longest` plus a
    // request timeout after it.
    auto ticket = cutter_.arm(std::chrono::steady_clock::now() + left + answer_grace(), cut);
    auto out = c->run(statements::ring, {entry_id, std::string(secs), entry_id});
    late = ticket.fired();
    return out;
  }();
  if (stop.stop_requested() || late) {
    c->close();  // cut off, or about to be: its late answer must not be read as another's
    give_back(std::move(c));
    return late && !stop.stop_requested() ? rung::timed_out : rung::stopped;
  }
  if (!r || r->rows.empty() || !r->rows[0][0]) {
    c->close();
    give_back(std::move(c));
    return rung::no_bell;
  }
  bool got = r->i64(0, 0) == 1;
  give_back(std::move(c));
  return got ? rung::yes : rung::timed_out;
}

void bells::close() noexcept {
  closing_.request_stop();  // an open under way is given up
  std::vector<std::unique_ptr<conn>> idle;
  {
    std::lock_guard lk(mu_);
    closed_ = true;
    open_ -= idle_.size();
    idle.swap(idle_);
  }
  returned_.notify_all();
}

}  // namespace dlock::detail::my
