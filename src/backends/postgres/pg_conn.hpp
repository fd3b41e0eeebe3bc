#pragma once
// One libpq connection with a deadline on every request. libpq's blocking calls have no
// timeout of their own (connect_timeout is in whole seconds and a hung server blocks
// PQexec forever), so requests are sent asynchronously and awaited with poll(); a request
// that misses its deadline closes the connection, and the owner reconnects on its next call.

#include <libpq-fe.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <stop_token>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "backends/common/request_guard.hpp"
#include "backends/common/socket_interrupt.hpp"
#include "core/result.hpp"

namespace dlock::detail::pg {

// What to connect to. The password only ever travels inside `params`; `where` is for messages.
struct target {
  std::vector<std::pair<std::string, std::string>> params;  // libpq keyword -> value
  std::string where;                                        // "postgres host:port/db"
  // The server must never end the connection for being idle: it waits between a session's
  // requests, and a role's or database's idle_session_timeout below that gap would end the
  // session under its holder. Asked for as idle_session_timeout=0 among the startup options,
  // which outrank ALTER ROLE / ALTER DATABASE settings.
  bool never_idle_out{false};
  // Set once a server refused that option (before PostgreSQL 14: an unknown parameter, and
  // no idle timeout to fear); shared by the target's copies, so later connects skip it.
  std::shared_ptr<std::atomic<bool>> no_idle_timeout = std::make_shared<std::atomic<bool>>(false);
};

class rows {
 public:
  explicit rows(PGresult* r) : r_(r, &PQclear) {}
  int count() const { return PQntuples(r_.get()); }
  bool null(int row, int col) const { return PQgetisnull(r_.get(), row, col) != 0; }
  std::string text(int row, int col) const {
    return {PQgetvalue(r_.get(), row, col),
            static_cast<std::size_t>(PQgetlength(r_.get(), row, col))};
  }
  std::int64_t i64(int row, int col) const;
  // Rows an INSERT/UPDATE/DELETE touched.
  std::int64_t affected() const;

 private:
  std::unique_ptr<PGresult, decltype(&PQclear)> r_;
};

// A statement prepared once per connection, on first use, under `name`.
struct statement {
  std::string name;
  std::string sql;
};

class conn {
 public:
  // Connects within `timeout`. Failures: permission_denied (bad password, unknown role),
  // invalid_argument (no such database), backend_unavailable (refused, timed out, starting),
  // cancelled (`stop` requested while connecting: looked at every 50 ms).
  static result<conn> open(const target& t, std::chrono::milliseconds timeout,
                           std::stop_token stop = {});

  conn(conn&& o) noexcept
      : c_(std::exchange(o.c_, nullptr)),
        where_(std::move(o.where_)),
        timeout_(o.timeout_),
        prepared_(std::move(o.prepared_)),
        unnamed_(o.unnamed_),
        ended_(std::move(o.ended_)),
        interrupt_(std::move(o.interrupt_)),
        guard_(std::move(o.guard_)) {}
  conn& operator=(conn&& o) noexcept;
  conn(const conn&) = delete;
  ~conn() { close(); }

  // Runs `s` with text parameters, ending by the request timeout or `until` if sooner. A
  // broken connection or a missed deadline closes this connection (usable() turns false) and
  // fails with backend_unavailable.
  result<rows> run(const statement& s, const std::vector<std::string>& params,
                   std::optional<std::chrono::steady_clock::time_point> until = std::nullopt);
  // Runs parameterless SQL (DDL, LISTEN) through the simple protocol; may hold several
  // statements.
  result<rows> exec(const std::string& sql);

  bool usable() const { return c_ && PQstatus(c_) == CONNECTION_OK && !ended_->error; }
  void close();
  int socket() const { return c_ ? PQsocket(c_) : -1; }
  // Lets another thread break off a request in flight on this connection (shutdown of its
  // socket, only while the connection is open); shared, so it may outlive the connection.
  std::shared_ptr<socket_interrupt> interrupter() const { return interrupt_; }
  // Reads and parses what the server sent without blocking; false if the connection broke or
  // the server sent anything but a notification, a notice or a parameter status between
  // requests. An unsolicited error is the server ending the connection (a terminated backend
  // sends FATAL, then frees its locks, then closes): waiting for the EOF would tell the owner
  // after another client may already have been granted.
  bool consume();
  // The server's reason when consume() saw it end the connection, else empty.
  const std::string& end_reason() const { return ended_->message; }
  // Channels of the notifications received so far (each once per notification).
  std::vector<std::string> take_notifications();
  const std::string& where() const { return where_; }
  // Statements go unnamed (parsed with every run) instead of prepared once: behind a
  // transaction-pooling proxy, a statement prepared on one server connection is missing on
  // the next (or already there, prepared by another client).
  void set_unnamed(bool on) { unnamed_ = on; }
  // From now on a request unanswered after the request timeout is cut off by `g` (which first
  // tells a session's holds: request_guard.hpp); this connection's own deadline becomes only
  // a backstop behind it.
  void guard_requests(request_guard g) { guard_ = std::move(g); }

 private:
  // What libpq's notice receiver saw between requests; on the heap, as libpq keeps its
  // address while the conn moves.
  struct unsolicited {
    bool error{false};
    std::string message;
  };

  // One attempt with these options; `refused_idle` says whether the server refused
  // idle_session_timeout among them.
  static result<conn> open_once(const target& t, bool keep_idle, std::chrono::milliseconds timeout,
                                bool& refused_idle, const std::stop_token& stop);
  conn(PGconn* c, std::string where, std::chrono::milliseconds timeout,
       std::unique_ptr<unsolicited> ended)
      : c_(c), where_(std::move(where)), timeout_(timeout), ended_(std::move(ended)) {}
  // `callers`: the deadline is the caller's, sooner than the request timeout.
  result<rows> await(std::chrono::steady_clock::time_point deadline, std::string_view what,
                     bool callers = false);
  failure broken(std::string_view what);
  failure not_connected() const;
  // When a request's own deadline is, `until` aside: the request timeout, or its backstop
  // where a guard keeps it.
  std::chrono::steady_clock::time_point reply_deadline() const;
  // `r` as the caller sees it: a guard's cut is the request timeout's, not a broken link.
  result<rows> timed(result<rows> r, const std::optional<request_cutter::ticket>& cut,
                     std::string_view what);

  PGconn* c_{nullptr};
  std::string where_;
  std::chrono::milliseconds timeout_{};
  std::set<std::string> prepared_;
  bool unnamed_{false};
  std::unique_ptr<unsolicited> ended_ = std::make_unique<unsolicited>();
  std::shared_ptr<socket_interrupt> interrupt_ = std::make_shared<socket_interrupt>();
  std::optional<request_guard> guard_;
};

// How a connection reaches the server: directly, or through a pooler that hands its
// statements to server processes it chooses.
struct route {
  bool direct{false};  // the server's peer is this very socket: its process is this session's
  bool pooled{false};
  std::string seen;                  // what showed that it is pooled
  std::string idle_session_timeout;  // the server's setting for this session, in ms
};

// Direct if the server's peer is this connection's own TCP socket; otherwise a second
// connection (to `t`) holds a server process in a transaction while `c` runs a statement:
// pooled if the two shared a server process, or if `c`'s server process changed. A quiet
// transaction pool would hand `c` the same server process twice; pinning it elsewhere is
// what shows the pooling. Neither step waits long for a server process (pg_route.cpp): a
// wait itself shows a pool.
result<route> probe_route(conn& c, const target& t, std::chrono::milliseconds timeout);

// Maps an error result onto a dlock failure naming `where`.
failure map_error(const PGresult* r, std::string_view where);

// SQLSTATE of the error dlock's own functions raise when the session's lease has lapsed.
inline constexpr std::string_view session_expired_state = "DL001";

// Bytes as hex digits, for a bytea statement parameter (parameters are text, and
// decode($n, 'hex') reads them); and back, for a column selected with encode(x, 'hex').
std::string to_hex(std::string_view bytes);
std::string from_hex(std::string_view digits);

}  // namespace dlock::detail::pg
