#include "support/fenced_register.hpp"

#include <sqlite3.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <stdexcept>
#include <utility>

namespace dlock::test {
namespace {

constexpr const char* schema = R"sql(
CREATE TABLE IF NOT EXISTS fence_state(
  id INTEGER PRIMARY KEY CHECK (id = 1), value INTEGER NOT NULL, max_token INTEGER NOT NULL,
  max_pid INTEGER NOT NULL, max_tid INTEGER NOT NULL);
INSERT OR IGNORE INTO fence_state VALUES (1, 0, 0, 0, 0);
CREATE TABLE IF NOT EXISTS fence_writes(
  seq INTEGER PRIMARY KEY AUTOINCREMENT, token INTEGER NOT NULL, value INTEGER NOT NULL,
  accepted INTEGER NOT NULL, pid INTEGER NOT NULL, tid INTEGER NOT NULL,
  mono_ns INTEGER NOT NULL);
)sql";

// Generous: a writer paused by a test (SIGSTOP) while inside its short transaction must not
// make the others fail; they wait for it instead.
constexpr int busy_timeout_ms = 30'000;

[[noreturn]] void throw_db(sqlite3* db, const std::string& what) {
  throw std::runtime_error("fenced register: " + what + ": " +
                           (db ? sqlite3_errmsg(db) : "out of memory"));
}

void exec(sqlite3* db, const char* sql) {
  if (sqlite3_exec(db, sql, nullptr, nullptr, nullptr) != SQLITE_OK) throw_db(db, sql);
}

class statement {
 public:
  statement(sqlite3* db, const char* sql) : db_(db) {
    if (sqlite3_prepare_v2(db, sql, -1, &s_, nullptr) != SQLITE_OK) throw_db(db, sql);
  }
  statement(const statement&) = delete;
  ~statement() { sqlite3_finalize(s_); }
  statement& bind(int i, std::int64_t v) {
    sqlite3_bind_int64(s_, i, v);
    return *this;
  }
  bool step() {
    int rc = sqlite3_step(s_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    throw_db(db_, "step");
  }
  std::int64_t col(int i) const { return sqlite3_column_int64(s_, i); }

 private:
  sqlite3* db_;
  sqlite3_stmt* s_{nullptr};
};

// Rolls back unless committed, so an exception never leaves the write lock held.
class transaction {
 public:
  explicit transaction(sqlite3* db) : db_(db) { exec(db, "BEGIN IMMEDIATE"); }
  transaction(const transaction&) = delete;
  ~transaction() {
    if (!done_) sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
  }
  void commit() {
    exec(db_, "COMMIT");
    done_ = true;
  }

 private:
  sqlite3* db_;
  bool done_{false};
};

}  // namespace

std::int64_t monotonic_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return std::int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

fenced_register fenced_register::open(const std::string& path) {
  sqlite3* db = nullptr;
  int rc = sqlite3_open_v2(
      path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
  fenced_register r(db);  // owns db from here, also on failure
  if (rc != SQLITE_OK) throw_db(db, "open '" + path + "'");
  sqlite3_busy_timeout(db, busy_timeout_ms);
  exec(db, "PRAGMA journal_mode=WAL");
  transaction t(db);
  exec(db, schema);
  t.commit();
  return r;
}

fenced_register::fenced_register(fenced_register&& o) noexcept
    : db_(std::exchange(o.db_, nullptr)) {}

fenced_register& fenced_register::operator=(fenced_register&& o) noexcept {
  if (this != &o) {
    sqlite3_close_v2(db_);
    db_ = std::exchange(o.db_, nullptr);
  }
  return *this;
}

fenced_register::~fenced_register() { sqlite3_close_v2(db_); }

std::int64_t fenced_register::read() {
  statement s(db_, "SELECT value FROM fence_state WHERE id = 1");
  if (!s.step()) throw std::runtime_error("fenced register: state row missing");
  return s.col(0);
}

namespace {

// Inside a write transaction: whether this thread may act with `token`; if so the fence is
// raised to it (and the value set, when `value` is given). Returns {allowed, current value}.
std::pair<bool, std::int64_t> pass_fence(sqlite3* db, std::int64_t tok,
                                         std::optional<std::int64_t> value) {
  const auto pid = getpid();
  const auto tid = static_cast<pid_t>(syscall(SYS_gettid));
  statement cur(db, "SELECT max_token, max_pid, max_tid, value FROM fence_state WHERE id = 1");
  if (!cur.step()) throw std::runtime_error("fenced register: state row missing");
  // Equal tokens come from one grant; a different holder with the same token is refused so a
  // backend that hands out a token twice cannot hide behind the register.
  bool same_holder = cur.col(1) == pid && cur.col(2) == tid;
  bool allowed = tok > cur.col(0) || (tok == cur.col(0) && same_holder && tok > 0);
  if (!allowed) return {false, cur.col(3)};
  statement up(db,
               "UPDATE fence_state SET value = ?1, max_token = ?2, max_pid = ?3, max_tid = ?4 "
               "WHERE id = 1");
  up.bind(1, value.value_or(cur.col(3))).bind(2, tok).bind(3, pid).bind(4, tid).step();
  return {true, value.value_or(cur.col(3))};
}

}  // namespace

std::optional<std::int64_t> fenced_register::read(std::uint64_t token) {
  transaction t(db_);
  auto [allowed, value] = pass_fence(db_, static_cast<std::int64_t>(token), std::nullopt);
  t.commit();
  if (!allowed) return std::nullopt;
  return value;
}

bool fenced_register::try_write(std::uint64_t token, std::int64_t value) {
  const auto tok = static_cast<std::int64_t>(token);
  transaction t(db_);
  bool accepted = pass_fence(db_, tok, value).first;
  statement rec(db_,
                "INSERT INTO fence_writes(token, value, accepted, pid, tid, mono_ns) "
                "VALUES (?1, ?2, ?3, ?4, ?5, ?6)");
  rec.bind(1, tok).bind(2, value).bind(3, accepted ? 1 : 0).bind(4, getpid());
  rec.bind(5, static_cast<pid_t>(syscall(SYS_gettid)));
  rec.bind(6, monotonic_ns()).step();
  t.commit();
  return accepted;
}

std::vector<fenced_register::write_record> fenced_register::writes() {
  statement s(db_,
              "SELECT seq, token, value, accepted, pid, tid, mono_ns FROM fence_writes "
              "ORDER BY seq");
  std::vector<write_record> out;
  while (s.step()) {
    out.push_back({s.col(0), static_cast<std::uint64_t>(s.col(1)), s.col(2), s.col(3) != 0,
                   static_cast<pid_t>(s.col(4)), static_cast<pid_t>(s.col(5)), s.col(6)});
  }
  return out;
}

}  // namespace dlock::test
