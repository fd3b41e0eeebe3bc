#include "backends/mysql/my_conn.hpp"

#include <errmsg.h>
#include <mysqld_error.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string_view>

#include "core/open_budget.hpp"

namespace dlock::detail::my {
namespace {

bool is_integer(enum_field_types t) {
  return t == MYSQL_TYPE_TINY || t == MYSQL_TYPE_SHORT || t == MYSQL_TYPE_LONG ||
         t == MYSQL_TYPE_INT24 || t == MYSQL_TYPE_LONGLONG;
}

// What an idle connection's readable bytes say: the server's error packet, sent as it ends
// the connection (0xFF, a 2-byte code, '#' and a 5-byte SQLSTATE, the message), or nothing.
std::string ending_packet(int fd) {
  unsigned char b[512];
  auto n = ::recv(fd, b, sizeof b, MSG_PEEK | MSG_DONTWAIT);
  if (n == 0) return "closed, with no error sent";
  if (n < 0) return std::strerror(errno);
  if (n < 7 || b[4] != 0xFF) return {};
  const unsigned code = b[5] | (b[6] << 8);
  const auto len = std::min<std::size_t>(b[0] | (b[1] << 8) | (b[2] << 16), n - 4);
  std::size_t at = 7;
  if (len > 9 && b[7] == '#') at = 13;
  if (at > len + 4) return {};
  std::string msg(reinterpret_cast<const char*>(b) + at, len + 4 - at);
  for (auto& c : msg) {
    if (static_cast<unsigned char>(c) < 0x20) c = ' ';
  }
  return msg + " (error " + std::to_string(code) + ")";
}

}  // namespace

std::int64_t outcome::i64(std::size_t row, std::size_t col) const {
  const auto& v = rows[row][col];
  return v ? std::strtoll(v->c_str(), nullptr, 10) : 0;
}

bool connection_lost(unsigned code) {
  return code == CR_SERVER_GONE_ERROR || code == CR_SERVER_LOST ||
         code == CR_SERVER_LOST_EXTENDED || code == CR_CONNECTION_ERROR ||
         code == CR_CONN_HOST_ERROR || code == ER_CONNECTION_KILLED || code == ER_SERVER_SHUTDOWN ||
         code == CR_COMMANDS_OUT_OF_SYNC;
}

failure map_error(unsigned code, std::string_view sqlstate, std::string_view msg,
                  std::string_view where) {
  auto text = std::string(where) + ": " + std::string(msg) + " (error " + std::to_string(code) +
              (sqlstate.empty() ? "" : ", SQLSTATE " + std::string(sqlstate)) + ")";
  auto code_of = [&]() {
    if (sqlstate == "45000" && msg.starts_with("dlock session")) return errc::session_expired;
    switch (code) {
      case ER_ACCESS_DENIED_ERROR:
      case ER_DBACCESS_DENIED_ERROR:
      case ER_ACCOUNT_HAS_BEEN_LOCKED:
      case 1142:  // ER_TABLEACCESS_DENIED_ERROR
      case 1370:  // ER_PROCACCESS_DENIED_ERROR
      case 1698:  // ER_ACCESS_DENIED_NO_PASSWORD_ERROR
      case 1792:  // ER_CANT_EXECUTE_IN_READ_ONLY_TRANSACTION: no retry lets it write
        return errc::permission_denied;
      case ER_BAD_DB_ERROR:
        return errc::invalid_argument;
      case ER_CON_COUNT_ERROR:
      case ER_LOCK_WAIT_TIMEOUT:
      case ER_LOCK_DEADLOCK:
      case ER_QUERY_INTERRUPTED:
      case ER_STATEMENT_TIMEOUT:
      case ER_NEED_REPREPARE:
      case ER_DUP_ENTRY:  // two attempts with one entry id raced; the retry finds the entry
        return errc::backend_unavailable;
      default:
        return connection_lost(code) || (code >= 2000 && code < 3000) ? errc::backend_unavailable
                                                                      : errc::backend_error;
    }
  };
  return {make_error_code(code_of()), text};
}

result<conn> conn::open(const target& t, std::chrono::milliseconds timeout) {
  static std::once_flag library;
  std::call_once(library, [] {
    // libmariadb sets SIGPIPE to SIG_IGN for the whole process when it initialises. A library
    // must leave its host's signal dispositions alone; libmariadb itself sends with
    // MSG_NOSIGNAL, so putting the host's disposition back costs nothing.
    struct sigaction host {};
    ::sigaction(SIGPIPE, nullptr, &host);
    mysql_library_init(0, nullptr, nullptr);
    ::sigaction(SIGPIPE, &host, nullptr);
  });
  MYSQL* m = mysql_init(nullptr);
  if (!m) return fail(errc::backend_error, t.where + ": libmariadb could not allocate");
  unsigned secs = static_cast<unsigned>(std::max<long long>(1, (timeout.count() + 999) / 1000));
  // Within session::open, connecting gets only what is left of its budget (whole seconds:
  // the client library's unit).
  unsigned connect_secs =
      static_cast<unsigned>(std::max<long long>(1, (connect_bound(timeout).count() + 999) / 1000));
  my_bool off = 0;
  mysql_options(m, MYSQL_OPT_CONNECT_TIMEOUT, &connect_secs);
  unsigned read_secs = secs;
  if (t.read_timeout.count() > 0) {
    read_secs =
        static_cast<unsigned>(std::max<long long>(1, (t.read_timeout.count() + 999) / 1000));
  }
  mysql_options(m, MYSQL_OPT_READ_TIMEOUT, &read_secs);
  // A longer read timeout is a guard's backstop (request_guard.hpp) or a doorbell's wait: a
  // send must not time out first and close the connection unguarded.
  unsigned write_secs = std::max(secs, read_secs);
  mysql_options(m, MYSQL_OPT_WRITE_TIMEOUT, &write_secs);
  mysql_options(m, MYSQL_OPT_RECONNECT, &off);
  mysql_options(m, MYSQL_SET_CHARSET_NAME, "utf8mb4");
  // Leases are compared as UTC milliseconds; a row lock wait never outlives the request. A
  // server with short net_*_timeouts must not cut a request off before the client would.
  // interactive_timeout is left alone: it replaces wait_timeout only for clients that
  // connect with CLIENT_INTERACTIVE, which dlock never does.
  auto at_least = [](const char* var, long long v) {
    return std::string(", SESSION ") + var + " = GREATEST(@@SESSION." + var + ", " +
           std::to_string(v) + ")";
  };
  auto init = "SET time_zone = '+00:00', innodb_lock_wait_timeout = " + std::to_string(secs) +
              at_least("net_read_timeout", secs) + at_least("net_write_timeout", secs);
  if (t.wait_timeout > 0) {
    init += t.exact_wait_timeout ? ", SESSION wait_timeout = " + std::to_string(t.wait_timeout)
                                 : at_least("wait_timeout", t.wait_timeout);
  }
  init += t.init;
  mysql_options(m, MYSQL_INIT_COMMAND, init.c_str());
  // A URL's host and port name a TCP endpoint. libmariadb would take the host "localhost" for
  // its default Unix socket and ignore the port, so localhost:PORT and 127.0.0.1:PORT could
  // be two servers, each granting the same lock.
  if (!t.host.empty()) {
    unsigned tcp = MYSQL_PROTOCOL_TCP;
    mysql_options(m, MYSQL_OPT_PROTOCOL, &tcp);
  }
  // FOUND_ROWS: an UPDATE that matched its row counts as 1 even if nothing changed (a
  // renewal within the same millisecond must not look like a lapsed lease).
  auto flags = CLIENT_FOUND_ROWS | CLIENT_MULTI_RESULTS;
  if (!mysql_real_connect(m, t.host.empty() ? nullptr : t.host.c_str(), t.user.c_str(),
                          t.has_password ? t.password.c_str() : nullptr, t.db.c_str(), t.port,
                          nullptr, flags)) {
    auto f = map_error(mysql_errno(m), mysql_sqlstate(m), mysql_error(m), t.where);
    if (mysql_errno(m) == ER_DBACCESS_DENIED_ERROR) {
      f.message += ": database '" + t.db + "' does not exist or this user may not use it";
    }
    mysql_close(m);
    return fail(f);
  }
  conn c(m, t.where);
  c.interrupt_->set(static_cast<int>(mysql_get_socket(m)));
  if (t.wait_timeout > 0) {
    if (auto r = c.check_wait_timeout(t); !r) return fail(r.error());
  }
  // Read committed: a DELETE then locks only the rows it deletes. Under repeatable read a
  // session's goodbye (DELETE ... WHERE session = ?), run as a scan, locked every entry and
  // deadlocked with other sessions' enqueues (9 runs in 40 of four sessions contending). Not
  // where the binary log is written statement by statement, which refuses it (error 1665).
  const std::string var = c.mariadb() ? "tx_isolation" : "transaction_isolation";
  if (auto r = c.exec("SET SESSION " + var +
                      " = IF(@@log_bin = 0 OR @@binlog_format <> 'STATEMENT', 'READ-COMMITTED',"
                      " @@SESSION." +
                      var + ")");
      !r) {
    return fail(r.error());
  }
  return c;
}

// A server caps wait_timeout (at 365 days), and a proxy may swallow the SET: a connection
// the server would end while idle loses the session's locks mid-hold.
result<void> conn::check_wait_timeout(const target& t) {
  auto r = exec("SELECT @@SESSION.wait_timeout, @@GLOBAL.wait_timeout");
  if (!r) return fail(r.error());
  if (r->rows.empty()) return fail(errc::backend_error, where_ + ": no wait_timeout");
  auto have = r->i64(0, 0);
  bool ok = t.exact_wait_timeout ? have == t.wait_timeout : have >= t.wait_timeout_min;
  if (ok) return {};
  return fail(errc::invalid_argument,
              where_ + ": this connection's wait_timeout must be " +
                  (t.exact_wait_timeout ? "" : "at least ") +
                  std::to_string(t.exact_wait_timeout ? t.wait_timeout : t.wait_timeout_min) +
                  " s for " + t.wait_timeout_for + ", but the server keeps it at " +
                  std::to_string(have) + " s (server setting wait_timeout = " + r->text(0, 1) +
                  " s; SET SESSION wait_timeout was capped or ignored): use a shorter ttl, or " +
                  "a server (or proxy) that allows this wait_timeout");
}

bool conn::mariadb() const {
  const char* v = m_ ? mysql_get_server_info(m_) : nullptr;
  return v && std::string_view(v).find("MariaDB") != std::string_view::npos;
}

bool conn::peer_closed() {
  if (!m_) return true;
  pollfd p{socket(), POLLIN, 0};
  if (::poll(&p, 1, 0) <= 0) return false;
  char byte;
  auto n = ::recv(p.fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return false;
  if (ended_.empty()) ended_ = ending_packet(p.fd);
  close();
  return true;
}

void conn::close() {
  if (interrupt_) interrupt_->clear();  // before the descriptor can be reused
  for (auto& [sql, s] : stmts_) mysql_stmt_close(s);
  stmts_.clear();
  if (m_) mysql_close(m_);
  m_ = nullptr;
}

failure conn::error(unsigned code, const char* state, const char* msg) {
  auto f = map_error(code, state ? state : "", msg ? msg : "", where_);
  if (connection_lost(code)) {
    if (ended_.empty())
      ended_ = std::string(msg ? msg : "") + " (error " + std::to_string(code) + ")";
    close();
  }
  return f;
}

void conn::drop(const std::string& sql) {
  auto it = stmts_.find(sql);
  if (it == stmts_.end()) return;
  mysql_stmt_close(it->second);
  stmts_.erase(it);
}

result<MYSQL_STMT*> conn::prepared(const std::string& sql) {
  if (!m_) return fail(errc::backend_unavailable, where_ + ": not connected");
  if (auto it = stmts_.find(sql); it != stmts_.end()) return it->second;
  MYSQL_STMT* s = mysql_stmt_init(m_);
  if (!s) return fail(errc::backend_error, where_ + ": cannot allocate a statement");
  if (mysql_stmt_prepare(s, sql.data(), sql.size()) != 0) {
    auto f = error(mysql_stmt_errno(s), mysql_stmt_sqlstate(s), mysql_stmt_error(s));
    mysql_stmt_close(s);
    return fail(f);
  }
  stmts_[sql] = s;
  return s;
}

result<outcome> conn::run(const std::string& sql, const std::vector<param>& params) {
  const auto cut = guard_ ? guard_->arm(interrupt_) : std::nullopt;
  return timed(run_once(sql, params), cut);
}

result<outcome> conn::exec(const std::string& sql) {
  const auto cut = guard_ ? guard_->arm(interrupt_) : std::nullopt;
  return timed(exec_once(sql), cut);
}

result<outcome> conn::timed(result<outcome> r, const std::optional<request_cutter::ticket>& cut) {
  if (r || !cut || !cut->fired()) return r;
  close();
  return fail(errc::backend_unavailable,
              where_ + ": no reply within " + std::to_string(guard_->after.count()) + " ms");
}

result<outcome> conn::run_once(const std::string& sql, const std::vector<param>& params) {
  auto s = prepared(sql);
  if (!s) return fail(s.error());
  std::vector<MYSQL_BIND> binds(params.size());
  std::vector<unsigned long> lengths(params.size());
  for (std::size_t i = 0; i < params.size(); ++i) {
    auto& b = binds[i];
    if (auto* str = std::get_if<std::string>(&params[i])) {
      lengths[i] = str->size();
      b.buffer_type = MYSQL_TYPE_STRING;
      b.buffer = const_cast<char*>(str->data());
      b.buffer_length = lengths[i];
      b.length = &lengths[i];
    } else {
      b.buffer_type = MYSQL_TYPE_LONGLONG;
      b.buffer = const_cast<std::int64_t*>(&std::get<std::int64_t>(params[i]));
    }
  }
  if ((!binds.empty() && mysql_stmt_bind_param(*s, binds.data())) || mysql_stmt_execute(*s)) {
    auto f = error(mysql_stmt_errno(*s), mysql_stmt_sqlstate(*s), mysql_stmt_error(*s));
    if (m_) drop(sql);  // a fresh prepare next time leaves no half-read state behind
    return fail(f);
  }
  auto r = read_results(*s);
  if (!r && m_) drop(sql);
  return r;
}

// Reads every result set of the executed statement (a CALL returns its SELECT's rows and
// then a status), keeping the first that has columns.
result<outcome> conn::read_results(MYSQL_STMT* s) {
  outcome out;
  bool have_rows = false;
  for (;;) {
    unsigned n = mysql_stmt_field_count(s);
    if (n == 0) {
      out.affected = mysql_stmt_affected_rows(s);
      out.insert_id = mysql_stmt_insert_id(s);
    } else {
      MYSQL_RES* meta = mysql_stmt_result_metadata(s);
      std::vector<MYSQL_BIND> b(n);
      std::vector<unsigned long> len(n);
      std::vector<my_bool> null(n);
      std::vector<std::int64_t> ints(n);
      for (unsigned c = 0; c < n; ++c) {
        bool integer = meta && is_integer(mysql_fetch_field_direct(meta, c)->type);
        b[c].buffer_type = integer ? MYSQL_TYPE_LONGLONG : MYSQL_TYPE_STRING;
        b[c].buffer = integer ? &ints[c] : nullptr;
        b[c].length = &len[c];
        b[c].is_null = &null[c];
      }
      if (meta) mysql_free_result(meta);
      if (mysql_stmt_bind_result(s, b.data())) {
        return fail(error(mysql_stmt_errno(s), mysql_stmt_sqlstate(s), mysql_stmt_error(s)));
      }
      int rc;
      while ((rc = mysql_stmt_fetch(s)) == 0 || rc == MYSQL_DATA_TRUNCATED) {
        std::vector<std::optional<std::string>> row(n);
        for (unsigned c = 0; c < n; ++c) {
          if (null[c]) continue;
          if (b[c].buffer_type == MYSQL_TYPE_LONGLONG) {
            row[c] = std::to_string(ints[c]);
            continue;
          }
          std::string v(len[c], '\0');
          if (len[c] > 0) {
            MYSQL_BIND one{};
            unsigned long got = 0;
            one.buffer_type = MYSQL_TYPE_STRING;
            one.buffer = v.data();
            one.buffer_length = len[c];
            one.length = &got;
            mysql_stmt_fetch_column(s, &one, c, 0);
          }
          row[c] = std::move(v);
        }
        if (!have_rows) out.rows.push_back(std::move(row));
      }
      if (rc == 1) {
        return fail(error(mysql_stmt_errno(s), mysql_stmt_sqlstate(s), mysql_stmt_error(s)));
      }
      have_rows = true;
    }
    int next = mysql_stmt_next_result(s);
    if (next == -1) break;
    if (next > 0) {
      return fail(error(mysql_stmt_errno(s), mysql_stmt_sqlstate(s), mysql_stmt_error(s)));
    }
  }
  mysql_stmt_free_result(s);
  return out;
}

result<outcome> conn::exec_once(const std::string& sql) {
  if (!m_) return fail(errc::backend_unavailable, where_ + ": not connected");
  if (mysql_real_query(m_, sql.data(), sql.size()) != 0) {
    return fail(error(mysql_errno(m_), mysql_sqlstate(m_), mysql_error(m_)));
  }
  outcome out;
  if (MYSQL_RES* res = mysql_store_result(m_)) {
    unsigned n = mysql_num_fields(res);
    while (MYSQL_ROW row = mysql_fetch_row(res)) {
      auto* lens = mysql_fetch_lengths(res);
      std::vector<std::optional<std::string>> r(n);
      for (unsigned c = 0; c < n; ++c) {
        if (row[c]) r[c] = std::string(row[c], lens[c]);
      }
      out.rows.push_back(std::move(r));
    }
    mysql_free_result(res);
  } else if (mysql_field_count(m_) != 0) {
    return fail(error(mysql_errno(m_), mysql_sqlstate(m_), mysql_error(m_)));
  } else {
    out.affected = mysql_affected_rows(m_);
    out.insert_id = mysql_insert_id(m_);
  }
  return out;
}

}  // namespace dlock::detail::my
