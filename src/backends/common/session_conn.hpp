#pragma once
// The connection that IS a SQL lease-mode session (PostgreSQL and MySQL/MariaDB): written once,
// with each database supplying its connection type, its statements and its error mapping
// (ShedLock's JDBC providers share one accessor the same way, each database giving only its
// `SqlStatementsSource`).
//
// The session's rows record its connection (its server process or connection id), so the
// server ending that connection (terminated, killed, restarted, noticed dead) ends the
// session: waiters take over at once. Hence:
// - once the connection is found gone, the session is lost for good: requests that act for
//   the session (`bound`: enqueue, renew, set a value) fail with session_expired, and the
//   engine hears of it once (session_event::expired);
// - the others (list, remove, close, wait, end another session) go on over a spare
//   connection;
// - between requests a watch thread (conn_watch) reads the socket, so a holder learns of a
//   server-side end at once, not at its next renewal;
// - once the lease ended on our side (on_expired), a request in flight is broken off;
// - a request on it unanswered after the request timeout ends the session too, and its holds
//   are told before the connection is cut (request_guard.hpp), as at the lease's end.
//
// Conn: `static result<Conn> open()` through the openers given here, `usable()`, `close()`,
// `socket()`, `interrupter()`, `run(statement, params)`, `guard_requests(request_guard)`.
// Threads: every member is safe to call from any thread; requests are serialised.

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

#include "backends/common/aside_conn.hpp"
#include "backends/common/conn_end_note.hpp"
#include "backends/common/conn_watch.hpp"
#include "backends/common/loss_notice.hpp"
#include "backends/common/request_cutter.hpp"
#include "backends/common/request_guard.hpp"
#include "backends/common/socket_interrupt.hpp"
#include "core/result.hpp"

namespace dlock::detail {

template <class Conn>
class session_conn {
 public:
  using opener = std::function<result<Conn>()>;
  // Whether an idle connection is still the server's: reads what arrived unasked (a
  // NOTIFY is fine; an error, a FATAL or EOF is not). Runs under the lock.
  using idle_check = std::function<bool(Conn&)>;

  // `where` names the server in messages; `open_session` makes the session's connection (or
  // its reconnect before the session row exists), whose requests are guarded after
  // `request_timeout` (its client library's own timeout must be request_guard::backstop());
  // `open` makes the others (a spare, an aside).
  session_conn(std::string where, std::string session_id, std::chrono::milliseconds request_timeout,
               opener open_session, opener open)
      : where_(std::move(where)),
        id_(std::move(session_id)),
        request_timeout_(request_timeout),
        open_session_(std::move(open_session)),
        open_(std::move(open)),
        aside_(where_, open_) {}
  session_conn(const session_conn&) = delete;
  session_conn& operator=(const session_conn&) = delete;
  ~session_conn() { watch_.stop(); }

  const std::string& where() const noexcept { return where_; }

  // Opens the session: runs `body` on a fresh connection (schema, session row); once it
  // succeeded, that connection is the session, watched with `fine` between requests.
  template <class Body>
  result<void> start(Body&& body, idle_check fine) {
    std::lock_guard lk(mu_);
    auto c = connection(false);
    if (!c) return fail(c.error());
    if (auto r = body(**c); !r) return r;
    aside_.set_idle_check(fine);
    opened_ = true;
    opened_seen_ = true;
    interrupt_ = (*c)->interrupter();
    watch_.start((*c)->socket(),
                 [this, fine = std::move(fine)] {
                   std::lock_guard lk(mu_);
                   if (!lost_ && !(conn_ && fine(*conn_))) mark_lost_locked();
                   return !lost_;
                 },
                 [this] { loss_.announce(); });
    return {};
  }

  // Runs `request(conn, lost)` on the session's connection (a spare one once it is lost,
  // unless `bound`); `lost` tells the request that the session's connection is gone (a
  // listing then checks its own entries too). A request that finds the connection broken
  // loses the session; a bound one then fails with session_expired.
  template <class Request>
  auto run(bool bound, Request&& request) -> decltype(request(std::declval<Conn&>(), false)) {
    using out_t = decltype(request(std::declval<Conn&>(), false));
    bool newly_lost = false;
    auto r = [&]() -> out_t {
      std::lock_guard lk(mu_);
      bool was_lost = lost_;
      auto c = connection(bound);
      if (!c) {
        newly_lost = lost_ && !was_lost;
        return fail(c.error());
      }
      // The watch would wake for the reply only to find the request holding the lock.
      const bool watched = opened_ && !lost_ && conn_ && *c == &*conn_;
      if (watched) watch_.pause();
      auto out = request(**c, lost_);
      if (watched) watch_.resume();
      if (opened_ && !lost_ && conn_ && *c == &*conn_ && !conn_->usable()) {
        mark_lost_locked();
        newly_lost = true;
        if (bound) return fail(ended_with_connection());
      }
      return out;
    }();
    if (newly_lost) loss_.announce();
    return r;
  }

  // Runs `request(conn, lost)`, a read not bound to the session, on a connection of its own
  // (aside_conn.hpp), ended by `until`: its caller gives up then, and a request on the
  // session's connection could neither be cut off nor pass one in flight there.
  template <class Request>
  auto run_aside(std::chrono::steady_clock::time_point until, Request&& request)
      -> decltype(request(std::declval<Conn&>(), false)) {
    if (!opened_seen_) return run(false, std::forward<Request>(request));
    const bool lost = lost_seen_;
    bool refused = false;
    auto r = aside_.run(
        until, [&](Conn& c) { return request(c, lost); }, &refused);
    // No second connection to be had: on the session's own, as before it existed.
    if (refused) return run(false, std::forward<Request>(request));
    return r;
  }

  // Opens run_aside's connection ahead of a timed caller's reads (aside_conn::warm).
  void warm_aside(std::chrono::steady_clock::time_point until) {
    if (opened_seen_ && until != std::chrono::steady_clock::time_point::max()) aside_.warm(until);
  }

  // The lease ended on our side: break off a request in flight on the session's connection.
  void on_expired() noexcept {
    expired_ = true;
    if (interrupt_) interrupt_->interrupt();
    aside_.interrupt();  // a waiter's read there: it hears of the end at once
  }
  // Whether on_expired() ran: the session's rows are dead to every other client.
  bool expired() const noexcept { return expired_; }

  // Once the connection is found gone, what the server said as it ended it, if anything.
  std::string end_reason() const { return ended_.reason(where_, id_); }

  void set_event_handler(std::function<void(session_event)> handler) {
    loss_.set_handler(std::move(handler));
  }

  // Closes the session: `goodbye` (the closing statements) gets one attempt with one
  // reconnect; the lease, or the connection's end, frees whatever it misses.
  template <class Goodbye>
  void close(Goodbye&& goodbye) noexcept {
    watch_.stop();
    aside_.close();
    std::lock_guard lk(mu_);
    if (closed_) return;
    closed_ = !opened_ || expired_;  // nothing was created, or the lease already ended
    // Not once the session ended meanwhile (on_expired: the host's exit broke the goodbye off):
    // a reconnect there waited on a stopped server, and held the exit, which cannot cut it.
    for (int attempt = 0; attempt < 2 && !closed_ && !expired_; ++attempt) {
      auto c = connection(false);
      if (c && goodbye(**c)) break;
      if (!lost_ && conn_ && !conn_->usable()) mark_lost_locked();
    }
    conn_.reset();
    spare_.reset();
    closed_ = true;
  }

 private:
  // Caller holds mu_.
  result<Conn*> connection(bool bound) {
    if (closed_) return fail(errc::session_closed, where_ + ": session closed");
    if (!lost_ && conn_ && conn_->usable()) return &*conn_;
    if (!lost_ && opened_) mark_lost_locked();
    if (lost_ && bound) return fail(ended_with_connection());
    auto& slot = opened_ ? spare_ : conn_;
    if (!slot || !slot->usable()) {
      slot.reset();
      // An ended session dials no more (a background removal's retry): the host's exit,
      // which ends it, cannot cut a connect to a stopped server and waited for it.
      if (expired_) {
        return fail(errc::session_expired, where_ + ": session " + id_ + " has ended");
      }
      auto c = opened_ ? open_() : open_session_();
      if (!c) return fail(c.error());
      slot.emplace(std::move(*c));
      if (!opened_) guard(*slot);
    }
    return &*slot;
  }

  // Only a session that was opened has holds to tell; a request of the open itself that
  // times out fails the open.
  void guard(Conn& c) {
    c.guard_requests({&cutter_, request_timeout_, [this] {
                        ended_.cut_here(request_timeout_);
                        if (opened_seen_) loss_.announce();
                      }});
  }

  failure ended_with_connection() const {
    return {make_error_code(errc::session_expired),
            where_ + ": session " + id_ + " ended with its connection" + ended_.in_parens()};
  }

  // Caller holds mu_. The server ends (or has ended) the session with the connection.
  void mark_lost_locked() {
    lost_ = true;
    lost_seen_ = true;
    if (!conn_) return;
    ended_.keep(*conn_);
    conn_->close();
  }

  const std::string where_;
  const std::string id_;
  const std::chrono::milliseconds request_timeout_;
  const opener open_session_;
  const opener open_;
  std::mutex mu_;
  std::optional<Conn> conn_;   // the session's connection
  std::optional<Conn> spare_;  // for requests not bound to the session, once conn_ is lost
  bool opened_{false};
  bool closed_{false};
  bool lost_{false};
  // opened_ and lost_ for run_aside, which does not take mu_.
  std::atomic<bool> opened_seen_{false};
  std::atomic<bool> lost_seen_{false};
  loss_notice loss_;
  // Breaks off a request in flight on the session's connection once the session expired.
  std::shared_ptr<socket_interrupt> interrupt_;
  std::atomic<bool> expired_{false};
  conn_end_note ended_;  // how the session's connection ended, once it did
  aside_conn<Conn> aside_;
  request_cutter cutter_;  // its thread ends before the connections it may cut and loss_ go
  conn_watch watch_;       // last: stopped before the members it uses go
};

}  // namespace dlock::detail
