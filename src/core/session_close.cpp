// A session's end: close() and its bounded variants, the close of the last reference, and
// the end after a refused release. Apart from session_core.cpp (its open and its life): a
// close must never hold its caller, often a destructor, on an unreachable server.
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "core/events.hpp"
#include "core/exit_guard.hpp"
#include "core/hold_core.hpp"
#include "core/run_aside.hpp"
#include "core/session_core.hpp"

namespace dlock::detail {

// The last reference is gone (the session, its locks and holds): close without making the
// caller -- often a lock's or session's destructor -- wait on an unreachable server longer
// than release_timeout. A thread of its own finishes the close and then deletes the core.
void session_core::destroy(session_core* p) noexcept {
  // Left to the process's end: its threads are the parent's, never to be joined here. Kept
  // where a leak checker sees it reachable.
  if (p->forked()) {
    static auto* left = new std::vector<session_core*>;
    try {
      left->push_back(p);
    } catch (...) {
    }
    return;
  }
  auto bound =
      p->backend_unreachable() ? std::chrono::milliseconds{0} : p->options_.release_timeout;
  if (!p->begin_close()) {
    // close() ran and its finisher, which held the last reference, is done with it.
    delete p;
    return;
  }
  run_bounded(bound, [p] {
    {
      exit_guard::closing during(p);
      p->finish_close();
    }
    delete p;
  });
}

// Whether the server is known not to be answering now: close() then does not wait for it.
bool session_core::backend_unreachable() noexcept {
  return state_.load() == session_state::suspended || (removals_ && removals_->unreachable());
}

bool session_core::begin_close() noexcept {
  {
    std::lock_guard lk(close_mu_);
    if (closed_) return false;
    closed_ = true;
  }
  if (backend_) {
    const bool expired = state_.load() == session_state::expired;
    // Before the stop: a waiter it wakes reads the state for its error (session_closed, not
    // session_expired, which a tester's waiters got about half the time).
    if (!expired) state_.store(session_state::closed);
    ended_.request_stop();
    if (!expired) {
      notify_holds(hold_state::released);
      set_state(session_state::closed);
    }
  }
  for (auto* t : {&renewer_, &monitor_}) t->request_stop();
  wake_.notify_all();
  if (removals_) removals_->close();
  return true;
}

// Joins the threads (each may be inside a backend call that waits for request_timeout) and
// closes the backend. Never on one of those threads.
void session_core::finish_close() noexcept {
  if (removals_) removals_->join();
  for (auto* t : {&renewer_, &monitor_}) {
    if (!t->joinable()) continue;
    if (t->get_id() == std::this_thread::get_id())
      t->detach();
    else
      t->join();
  }
  // At the host's exit the lease frees what is left; a close would start new requests.
  if (backend_ && !exit_guard::exiting()) backend_->close();
}

void session_core::abandon_for_exit() noexcept {
  if (forked()) return;  // the parent's connections: not this exit's to break off
  renewer_stop_.request_stop();
  if (removals_) removals_->close();
  if (backend_) backend_->on_expired();
}

std::string session_core::forked_message() const {
  return "the session to " + url_.redacted + " was opened by process " +
         std::to_string(opened_by_) + ", and this is its forked child, process " +
         std::to_string(::getpid()) +
         ": a child uses neither its parent's locks nor its session (open a session of its own)";
}

void session_core::close() noexcept {
  if (forked()) return;
  close_within(backend_unreachable() ? std::chrono::milliseconds{0} : options_.release_timeout);
}

void session_core::end_after_refusal(const failure& why,
                                     std::optional<steady::time_point> wait_until) noexcept {
  if (!ended_.stop_requested()) {
    try {
      std::string text = why.message +
                         ": the server refuses to remove this session's entry, which blocks its "
                         "lock for as long as the session lives; the session is ended (every "
                         "hold of it is lost) so that the server drops its entries";
      {
        std::lock_guard lk(why_mu_);
        ended_why_ = "ended by dlock: " + why.message + ", refused for good";
      }
      emit(options_.observer, [&](observer& o) { o.on_log(log_level::error, text); });
    } catch (...) {
    }
  }
  // Every hold is told lost before the close lets the server hand its locks on.
  expire();
  auto bound = std::chrono::milliseconds{0};
  if (wait_until) {
    bound =
        std::max(bound, std::chrono::ceil<std::chrono::milliseconds>(*wait_until - steady::now()));
  }
  close_within(bound);
}

void session_core::close_within(std::chrono::milliseconds bound) noexcept {
  if (!begin_close()) return;
  auto self = weak_from_this().lock();
  if (!self) {
    finish_close();  // not owned by a shared_ptr (cannot happen through open())
    return;
  }
  // The finisher holds a reference: if it outlives this call, the core outlives it.
  run_bounded(bound, [self = std::move(self)] {
    exit_guard::closing during(self.get());
    self->finish_close();
  });
}

// A close must not hold its caller -- often a destructor -- on an unreachable server for
// longer than release_timeout (run_aside.hpp).
void session_core::run_bounded(std::chrono::milliseconds bound,
                               std::function<void()> job) noexcept {
  (void)run_aside(std::move(job), std::chrono::steady_clock::now() + bound);
}

}  // namespace dlock::detail
