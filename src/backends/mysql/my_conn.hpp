#pragma once
// One libmariadb connection (MariaDB and MySQL servers) running prepared statements only:
// every value travels as a bound parameter, never inside SQL text. Statements are prepared
// once per connection and cached; a broken connection is closed and the owner reconnects on
// its next call (auto-reconnect is off: it would silently drop session state mid-call).

#include <mysql.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "backends/common/request_guard.hpp"
#include "backends/common/socket_interrupt.hpp"
#include "core/result.hpp"

namespace dlock::detail::my {

struct target {
  std::string host;  // empty: libmariadb's default, its local Unix socket; else TCP
  unsigned port{3306};
  std::string user;
  std::string password;
  bool has_password{false};
  std::string db;
  std::string where;  // "mysql user@host:port/db", for messages
  std::string init;   // more ", var = value" settings for the connection's session
  // The connection's own wait_timeout (seconds the server keeps it open without a
  // statement; 0: leave the server's). Raised to at least `wait_timeout` (kept if higher),
  // or set to exactly it when `exact_wait_timeout` (mode=advisory: it is the lease). open()
  // checks that it took effect -- at least `wait_timeout_min`, or exactly -- and refuses
  // the connection otherwise, naming `wait_timeout_for` as the reason it is needed.
  long long wait_timeout{0};
  long long wait_timeout_min{0};
  bool exact_wait_timeout{false};
  std::string wait_timeout_for;
  // How long a request may take to answer (0: the open()'s timeout): longer for a doorbell
  // connection (my_bell.hpp), whose GET_LOCK blocks by design.
  std::chrono::milliseconds read_timeout{0};
};

using param = std::variant<std::string, std::int64_t>;

// The rows of the first result set that had columns, as text, the affected-row count, and
// the insert id (also what LAST_INSERT_ID(expr) set in the statement).
struct outcome {
  std::vector<std::vector<std::optional<std::string>>> rows;
  std::uint64_t affected{0};
  std::uint64_t insert_id{0};

  std::int64_t i64(std::size_t row, std::size_t col) const;
  std::string text(std::size_t row, std::size_t col) const { return rows[row][col].value_or(""); }
};

class conn {
 public:
  // Failures: permission_denied (access denied, account locked), invalid_argument (unknown
  // database, or the server kept a wait_timeout other than `t` asks), backend_unavailable
  // (refused, timed out, shutting down).
  static result<conn> open(const target& t, std::chrono::milliseconds timeout);

  conn(conn&& o) noexcept
      : m_(std::exchange(o.m_, nullptr)),
        where_(std::move(o.where_)),
        stmts_(std::move(o.stmts_)),
        interrupt_(std::move(o.interrupt_)),
        ended_(std::move(o.ended_)),
        guard_(std::move(o.guard_)) {}
  conn& operator=(conn&&) = delete;
  conn(const conn&) = delete;
  ~conn() { close(); }

  // Runs `sql` as a prepared statement with `params` bound (CALLs included: every result
  // set is read).
  result<outcome> run(const std::string& sql, const std::vector<param>& params);
  // Runs parameterless SQL (DDL) through the text protocol, discarding any rows.
  result<outcome> exec(const std::string& sql);
  // From now on a request unanswered after the request timeout is cut off by `g` (which first
  // tells a session's holds: request_guard.hpp). Open the connection with a target whose
  // read_timeout is request_guard::backstop(): libmariadb fixes its own timeout at connect.
  void guard_requests(request_guard g) { guard_ = std::move(g); }

  bool usable() const { return m_ != nullptr; }
  // Whether the server is MariaDB (whose GET_LOCK takes a fractional timeout) or MySQL.
  bool mariadb() const;
  void close();
  int socket() const { return m_ ? static_cast<int>(mysql_get_socket(m_)) : -1; }
  // Lets another thread break off a request in flight on this connection (shutdown of its
  // socket, only while the connection is open); shared, so it may outlive the connection.
  std::shared_ptr<socket_interrupt> interrupter() const { return interrupt_; }
  // Whether the server ended this idle connection: with no request in flight the server
  // sends nothing, so anything readable (EOF, or the error packet of a KILL) means its end.
  // Closes the connection if so.
  bool peer_closed();
  const std::string& where() const { return where_; }
  // Once the connection is found ended, how: the server's error (a KILL, a wait_timeout, a
  // shutdown) or the client's ("Lost connection..."); empty before.
  const std::string& end_reason() const { return ended_; }

 private:
  conn(MYSQL* m, std::string where) : m_(m), where_(std::move(where)) {}
  result<void> check_wait_timeout(const target& t);
  result<outcome> run_once(const std::string& sql, const std::vector<param>& params);
  result<outcome> exec_once(const std::string& sql);
  // `r` as the caller sees it: a guard's cut is the request timeout's, not a lost connection.
  result<outcome> timed(result<outcome> r, const std::optional<request_cutter::ticket>& cut);
  failure error(unsigned code, const char* state, const char* msg);
  result<MYSQL_STMT*> prepared(const std::string& sql);
  result<outcome> read_results(MYSQL_STMT* s);
  void drop(const std::string& sql);

  MYSQL* m_{nullptr};
  std::string where_;
  std::map<std::string, MYSQL_STMT*> stmts_;
  std::shared_ptr<socket_interrupt> interrupt_ = std::make_shared<socket_interrupt>();
  std::string ended_;
  std::optional<request_guard> guard_;
};

// Maps a client or server error onto a dlock failure naming `where`.
failure map_error(unsigned code, std::string_view sqlstate, std::string_view msg,
                  std::string_view where);
// True for errors after which the connection cannot be used again.
bool connection_lost(unsigned code);

}  // namespace dlock::detail::my
