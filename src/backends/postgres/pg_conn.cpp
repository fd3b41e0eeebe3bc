#include "backends/postgres/pg_conn.hpp"

#include <poll.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>

#include "core/open_budget.hpp"

namespace dlock::detail::pg {
namespace {

using std::chrono::milliseconds;
using steady = std::chrono::steady_clock;

std::string trimmed(const char* s) {
  std::string out = s ? s : "";
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return out;
}

bool contains(const std::string& s, std::string_view part) {
  return s.find(part) != std::string::npos;
}

// libpq reports a failed connection only as text; the server's SQLSTATE is not exposed.
failure connect_failure(PGconn* c, const std::string& where) {
  auto msg = trimmed(PQerrorMessage(c));
  auto text = where + ": " + msg;
  if (contains(msg, "password authentication failed") || contains(msg, "no password supplied") ||
      contains(msg, "is not permitted to log in") || contains(msg, "pg_hba.conf") ||
      (contains(msg, "role \"") && contains(msg, "does not exist"))) {
    return {make_error_code(errc::permission_denied), text};
  }
  // TLS the server cannot meet, or a certificate refused: no retry mends them (as etcd's).
  if (contains(msg, "does not support SSL") || contains(msg, "certificate")) {
    return {make_error_code(errc::permission_denied), text};
  }
  if (contains(msg, "database \"") && contains(msg, "does not exist")) {
    return {make_error_code(errc::invalid_argument), text};
  }
  return {make_error_code(errc::backend_unavailable), text};
}

int remaining_ms(steady::time_point deadline) {
  auto left = std::chrono::ceil<milliseconds>(deadline - steady::now()).count();
  return left <= 0 ? 0 : static_cast<int>(std::min<long long>(left, 1 << 30));
}

// Waits until fd is ready for `events` or the deadline passes; false on timeout. A `stop`
// that can be requested is looked at every 50 ms (false too).
bool wait_fd(int fd, short events, steady::time_point deadline, const std::stop_token& stop = {}) {
  const bool stoppable = stop.stop_possible();
  for (;;) {
    if (stoppable && stop.stop_requested()) return false;
    int left = remaining_ms(deadline);
    if (left == 0) return false;
    pollfd p{fd, events, 0};
    int n = ::poll(&p, 1, stoppable ? std::min(left, 50) : left);
    if (n > 0) return true;
    if (n < 0 && errno != EINTR) return true;  // let libpq report the error
  }
}

}  // namespace

std::int64_t rows::i64(int row, int col) const {
  return std::strtoll(PQgetvalue(r_.get(), row, col), nullptr, 10);
}

std::int64_t rows::affected() const { return std::strtoll(PQcmdTuples(r_.get()), nullptr, 10); }

failure map_error(const PGresult* r, std::string_view where) {
  const char* state_c = PQresultErrorField(r, PG_DIAG_SQLSTATE);
  std::string state = state_c ? state_c : "";
  auto msg = std::string(where) + ": " + trimmed(PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY)) +
             (state.empty() ? "" : " (SQLSTATE " + state + ")");
  auto code = errc::backend_error;
  auto cls = state.substr(0, 2);
  if (state == session_expired_state) {
    code = errc::session_expired;
  } else if (cls == "08" || cls == "53" || state == "57P01" || state == "57P02" ||
             state == "57P03" || state == "57014" || state == "40001" || state == "40P01" ||
             state == "55P03" || state == "55006") {
    code = errc::backend_unavailable;  // connection, resources, shutdown, timeouts, conflicts
  } else if (cls == "28" || state == "42501" || state == "25006") {
    // 25006: a read-only transaction (a role with default_transaction_read_only): no retry
    // lets it write, as no retry grants a privilege.
    code = errc::permission_denied;
  } else if (state == "3D000" || state == "3F000" || cls == "22") {
    code = errc::invalid_argument;
  }
  return {make_error_code(code), msg};
}

result<conn> conn::open(const target& t, milliseconds timeout, std::stop_token stop) {
  bool keep_idle = t.never_idle_out && !*t.no_idle_timeout;
  bool refused_idle = false;
  auto c = open_once(t, keep_idle, timeout, refused_idle, stop);
  if (c || !keep_idle || !refused_idle) return c;
  // Before PostgreSQL 14 there is no such setting: nothing ends an idle connection.
  *t.no_idle_timeout = true;
  return open_once(t, false, timeout, refused_idle, stop);
}

result<conn> conn::open_once(const target& t, bool keep_idle, milliseconds timeout,
                             bool& refused_idle, const std::stop_token& stop) {
  std::vector<const char*> keys, values;
  std::string options;
  for (const auto& [k, v] : t.params) {
    if (k == "options" && keep_idle) {
      options = v + " -c idle_session_timeout=0";
      keys.push_back(k.c_str());
      values.push_back(options.c_str());
      continue;
    }
    keys.push_back(k.c_str());
    values.push_back(v.c_str());
  }
  if (keep_idle && options.empty()) {
    options = "-c idle_session_timeout=0";
    keys.push_back("options");
    values.push_back(options.c_str());
  }
  keys.push_back(nullptr);
  values.push_back(nullptr);
  PGconn* c = PQconnectStartParams(keys.data(), values.data(), 0);
  if (!c) return fail(errc::backend_error, t.where + ": libpq could not allocate a connection");
  // Within session::open, connecting gets only what is left of its budget.
  auto connect_timeout = connect_bound(timeout);
  auto deadline = steady::now() + connect_timeout;
  auto st = PQstatus(c) == CONNECTION_BAD ? PGRES_POLLING_FAILED : PGRES_POLLING_WRITING;
  while (st != PGRES_POLLING_OK) {
    if (st == PGRES_POLLING_FAILED) {
      auto msg = trimmed(PQerrorMessage(c));
      refused_idle = contains(msg, "unrecognized configuration parameter") &&
                     contains(msg, "idle_session_timeout");
      auto f = connect_failure(c, t.where);
      PQfinish(c);
      return fail(f);
    }
    if (!wait_fd(PQsocket(c), st == PGRES_POLLING_READING ? POLLIN : POLLOUT, deadline, stop)) {
      PQfinish(c);
      if (stop.stop_requested()) return fail(errc::cancelled, t.where + ": connecting stopped");
      return fail(errc::backend_unavailable, t.where + ": no connection within " +
                                                 std::to_string(connect_timeout.count()) + " ms");
    }
    st = PQconnectPoll(c);
  }
  // NOTICEs (e.g. "trigger does not exist, skipping" from idempotent DDL) are not errors;
  // libpq would print them to stderr. libpq also hands an ErrorResponse that arrives between
  // requests (a FATAL before the server closes the connection) to this receiver as a notice,
  // as it does with a message it did not expect while idle.
  auto ended = std::make_unique<unsolicited>();
  PQsetNoticeReceiver(
      c,
      [](void* arg, const PGresult* r) {
        auto* u = static_cast<unsolicited*>(arg);
        const char* sev = PQresultErrorField(r, PG_DIAG_SEVERITY_NONLOCALIZED);
        const char* msg = PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY);
        std::string s = sev ? sev : "";
        std::string m = msg ? msg : "";
        if (s == "ERROR" || s == "FATAL" || s == "PANIC" ||
            m.find("arrived from server while idle") != std::string::npos) {
          if (!u->error) u->message = m;
          u->error = true;
        }
      },
      ended.get());
  conn out(c, t.where, timeout, std::move(ended));
  out.interrupt_->set(PQsocket(c));
  return out;
}

conn& conn::operator=(conn&& o) noexcept {
  if (this != &o) {
    close();
    c_ = std::exchange(o.c_, nullptr);
    where_ = std::move(o.where_);
    timeout_ = o.timeout_;
    prepared_ = std::move(o.prepared_);
    unnamed_ = o.unnamed_;
    ended_ = std::move(o.ended_);
    interrupt_ = std::move(o.interrupt_);
    guard_ = std::move(o.guard_);
  }
  return *this;
}

void conn::close() {
  if (interrupt_) interrupt_->clear();  // before the descriptor can be reused
  if (c_) PQfinish(c_);
  c_ = nullptr;
  prepared_.clear();
}

failure conn::broken(std::string_view what) {
  auto msg = where_ + ": " + std::string(what) + ": " +
             (c_ ? trimmed(PQerrorMessage(c_)) : std::string("not connected"));
  close();
  return {make_error_code(errc::backend_unavailable), msg};
}

failure conn::not_connected() const {
  return {make_error_code(errc::backend_unavailable),
          where_ + ": " +
              (c_ && ended_->error ? "the server ended the connection: " + ended_->message
                                   : std::string("not connected"))};
}

bool conn::consume() {
  if (!c_ || PQconsumeInput(c_) != 1) return false;
  // PQconsumeInput only reads; PQisBusy parses, queueing notifications and passing an
  // unsolicited error to the notice receiver.
  (void)PQisBusy(c_);
  return usable();
}

std::vector<std::string> conn::take_notifications() {
  std::vector<std::string> out;
  while (PGnotify* n = c_ ? PQnotifies(c_) : nullptr) {
    out.emplace_back(n->relname);
    PQfreemem(n);
  }
  return out;
}

result<rows> conn::await(steady::time_point deadline, std::string_view what, bool callers) {
  std::optional<failure> error;
  std::optional<rows> last;
  for (;;) {
    while (PQisBusy(c_)) {
      if (!wait_fd(PQsocket(c_), POLLIN, deadline)) {
        close();
        return fail(errc::backend_unavailable,
                    where_ + ": " + std::string(what) + ": no reply " +
                        (callers ? std::string("before the caller's deadline")
                                 : "within " + std::to_string(timeout_.count()) + " ms"));
      }
      if (!PQconsumeInput(c_)) return fail(broken(what));
    }
    PGresult* r = PQgetResult(c_);
    if (!r) break;
    auto status = PQresultStatus(r);
    if (status == PGRES_FATAL_ERROR || status == PGRES_BAD_RESPONSE) {
      if (!error) error = map_error(r, where_);
      const char* sev = PQresultErrorField(r, PG_DIAG_SEVERITY_NONLOCALIZED);
      bool ending = sev && (std::string_view(sev) == "FATAL" || std::string_view(sev) == "PANIC");
      PQclear(r);
      if (ending) {
        // The server is ending the connection (a terminated backend sends FATAL, then frees
        // its locks, then closes): the end is now, not at the EOF that follows.
        auto f = *error;
        close();
        f.code = make_error_code(errc::backend_unavailable);
        return fail(f);
      }
    } else {
      last.emplace(r);
    }
  }
  if (PQstatus(c_) != CONNECTION_OK) {
    auto f = broken(what);
    if (error) f.message = error->message;  // the server's reason (e.g. terminated) is clearer
    return fail(f);
  }
  if (error) return fail(*error);
  if (!last) return fail(errc::protocol_error, where_ + ": " + std::string(what) + ": no result");
  return std::move(*last);
}

steady::time_point conn::reply_deadline() const {
  return steady::now() + (guard_ ? request_guard::backstop(timeout_) : timeout_);
}

result<rows> conn::timed(result<rows> r, const std::optional<request_cutter::ticket>& cut,
                         std::string_view what) {
  if (r || !cut || !cut->fired()) return r;
  close();
  return fail(errc::backend_unavailable, where_ + ": " + std::string(what) + ": no reply within " +
                                             std::to_string(timeout_.count()) + " ms");
}

result<rows> conn::run(const statement& s, const std::vector<std::string>& params,
                       std::optional<steady::time_point> until) {
  if (!usable()) return fail(not_connected());
  auto deadline = reply_deadline();
  const auto cut = guard_ ? guard_->arm(interrupt_) : std::nullopt;
  const bool callers = until && *until < deadline;
  if (callers) deadline = *until;
  std::vector<const char*> values;
  values.reserve(params.size());
  for (const auto& p : params) values.push_back(p.c_str());
  auto n = static_cast<int>(values.size());
  if (unnamed_) {
    if (!PQsendQueryParams(c_, s.sql.c_str(), n, nullptr, values.data(), nullptr, nullptr, 0)) {
      return fail(broken(s.name));
    }
    return timed(await(deadline, s.name, callers), cut, s.name);
  }
  if (!prepared_.contains(s.name)) {
    if (!PQsendPrepare(c_, s.name.c_str(), s.sql.c_str(), 0, nullptr)) {
      return fail(broken("prepare " + s.name));
    }
    auto r = timed(await(deadline, "prepare " + s.name, callers), cut, "prepare " + s.name);
    if (!r && usable() && r.error().message.find("SQLSTATE 42P05") != std::string::npos) {
      // Already prepared on this server process by someone else: a pooler in front.
      unnamed_ = true;
      return run(s, params, until);
    }
    if (!r) return r;
    prepared_.insert(s.name);
  }
  if (!PQsendQueryPrepared(c_, s.name.c_str(), n, values.data(), nullptr, nullptr, 0)) {
    return fail(broken(s.name));
  }
  auto r = timed(await(deadline, s.name, callers), cut, s.name);
  if (!r && usable() && r.error().message.find("SQLSTATE 26000") != std::string::npos) {
    // Prepared on another server process: a pooler in front. Nothing ran; run it unnamed.
    unnamed_ = true;
    return run(s, params, until);
  }
  return r;
}

result<rows> conn::exec(const std::string& sql) {
  if (!usable()) return fail(not_connected());
  const auto cut = guard_ ? guard_->arm(interrupt_) : std::nullopt;
  if (!PQsendQuery(c_, sql.c_str())) return fail(broken("query"));
  return timed(await(reply_deadline(), "query"), cut, "query");
}

std::string to_hex(std::string_view bytes) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) {
    out += digits[c >> 4];
    out += digits[c & 15];
  }
  return out;
}

std::string from_hex(std::string_view digits) {
  auto nibble = [](char c) { return c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10; };
  std::string bytes(digits.size() / 2, '\0');
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    bytes[i] = static_cast<char>(nibble(digits[2 * i]) << 4 | nibble(digits[2 * i + 1]));
  }
  return bytes;
}

}  // namespace dlock::detail::pg
