#pragma once
// A SQL lease-mode session's second connection, for the reads whose caller gives up at a
// deadline (a timed waiter's listing after a wake-up, `dlock run`'s look at the holder it
// waited for). On the session's own connection such a read waits behind any request in
// flight there and cannot be cut off without ending the session; against a server that
// stopped answering (a paused process, a black-holed route) a tester's `dlock run -w 3s` took
// 13 s so. Here the read is cut off at its caller's deadline, and a cut ends only this
// connection, opened again at the next such read.
//
// Conn: as session_conn's, with interrupter() and close().
// Threads: run() from any thread; requests are serialised, and one that cannot start before
// its deadline (another still waiting on the server) fails without waiting longer.

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

#include "backends/common/request_cutter.hpp"
#include "backends/common/timed_gate.hpp"
#include "core/open_budget.hpp"
#include "core/result.hpp"

namespace dlock::detail {

template <class Conn>
class aside_conn {
  using clock = std::chrono::steady_clock;

 public:
  using opener = std::function<result<Conn>()>;
  // Whether an idle connection is still the server's (session_conn::idle_check): the server
  // ends one idle past its timeout, and a read on it would fail once before a new one.
  using idle_check = std::function<bool(Conn&)>;

  aside_conn(std::string where, opener open) : where_(std::move(where)), open_(std::move(open)) {}
  aside_conn(const aside_conn&) = delete;
  aside_conn& operator=(const aside_conn&) = delete;

  // Before the first request.
  void set_idle_check(idle_check fine) { fine_ = std::move(fine); }

  // Runs `request(conn)`, ended by `until`: backend_unavailable if it could not start, or
  // had no answer, by then (a connection must be opened first: that too is bounded by it).
  // `*refused` is set, and nothing run, when the server refused a connection before `until`
  // (max_connections), now or within the last 10 s: the caller then uses its own.
  template <class Request>
  auto run(clock::time_point until, Request&& request, bool* refused)
      -> decltype(request(std::declval<Conn&>())) {
    *refused = false;
    std::unique_lock lk(mu_, std::defer_lock);
    if (until == clock::time_point::max()) {
      lk.lock();
    } else if (!lk.try_lock_until(until)) {
      return late("another request still waits on the server");
    }
    if (closed_) return fail(errc::session_closed, where_ + ": session closed");
    if (clock::now() >= until) return late("none was sent");
    if (!kept()) {
      conn_.reset();
      if (clock::now() < no_conn_until_) {
        *refused = true;
        return late("no connection of its own to be had");
      }
      std::optional<open_attempt_scope> bounded;
      if (until != clock::time_point::max()) bounded.emplace(until);
      auto c = open_();
      if (!c) {
        if (clock::now() >= until) return fail(c.error());  // a server not answering
        // Refused (a second tester's max_connections=20: waiters that could not list on a
        // connection of their own never saw their grant), not asked again at every read.
        no_conn_until_ = clock::now() + std::chrono::seconds{10};
        *refused = true;
        return fail(c.error());
      }
      conn_.emplace(std::move(*c));
    }
    auto ticket = cutter_.arm(until, conn_->interrupter());
    set_inflight(conn_->interrupter());
    auto out = request(*conn_);
    set_inflight(nullptr);
    if (ticket.fired()) {
      // Even an answer that beat the cut: the connection is shut down either way.
      conn_->close();
      conn_.reset();
      return late("the server did not answer");
    }
    if (!conn_->usable()) conn_.reset();
    return out;
  }

  // Opens the connection, if it is not open and no request is using it, by `until`: a timed
  // waiter does so as its wait begins, so that a read after its deadline (against a server
  // that stopped answering meanwhile) does not also have to connect, which libmariadb times
  // only in whole seconds. Never waits for a request in flight.
  void warm(clock::time_point until) {
    std::unique_lock lk(mu_, std::try_to_lock);
    if (!lk || closed_ || kept()) return;
    conn_.reset();
    if (clock::now() < no_conn_until_) return;
    open_attempt_scope bounded(until);
    if (auto c = open_()) {
      conn_.emplace(std::move(*c));
    } else if (clock::now() < until) {
      no_conn_until_ = clock::now() + std::chrono::seconds{10};
    }
  }

  // Breaks off the request in flight, if any: its caller's session has ended, and a waiter
  // must hear that at once, not at the request's deadline (a tester's waiters on a frozen
  // server returned session_expired 2-4.5 s after their session ended).
  void interrupt() noexcept {
    std::lock_guard lk(inflight_mu_);
    if (inflight_) inflight_->interrupt();
  }

  // Later requests fail; a request in flight keeps its connection until it ends (by its
  // deadline), and the destructor closes it.
  void close() noexcept {
    closed_ = true;
    std::unique_lock lk(mu_, std::try_to_lock);
    if (lk) conn_.reset();
  }

 private:
  void set_inflight(std::shared_ptr<socket_interrupt> cut) noexcept {
    std::lock_guard lk(inflight_mu_);
    inflight_ = std::move(cut);
  }

  // Caller holds mu_.
  bool kept() { return conn_ && conn_->usable() && (!fine_ || fine_(*conn_)); }

  std::unexpected<failure> late(const std::string& why) const {
    return fail(errc::backend_unavailable,
                where_ + ": no answer before the caller's deadline (" + why + ")");
  }

  const std::string where_;
  const opener open_;
  idle_check fine_;
  timed_gate mu_;
  std::optional<Conn> conn_;
  clock::time_point no_conn_until_{};  // a refused open is not tried again before then
  std::atomic<bool> closed_{false};
  std::mutex inflight_mu_;
  std::shared_ptr<socket_interrupt> inflight_;  // the request in flight's connection
  request_cutter cutter_;  // last: its thread ends before the connection it may cut
};

}  // namespace dlock::detail
