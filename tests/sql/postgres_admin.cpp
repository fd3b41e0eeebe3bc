// The PostgreSQL side of the SQL fault tests.
#include <libpq-fe.h>

#include <stdexcept>

#include "sql/sql_admin.hpp"
#include "support/mode_apart.hpp"
#include "support/postgres_server.hpp"

namespace dlock::test {
namespace {

// A connection of its own as the "dlock" user; throws naming `who` if it cannot.
PGconn* connect_as_dlock(std::uint16_t port, const std::string& who) {
  auto info = "host=127.0.0.1 port=" + std::to_string(port) +
              " user=dlock password=secret dbname=dlock connect_timeout=10";
  PGconn* c = PQconnectdb(info.c_str());
  if (PQstatus(c) != CONNECTION_OK) {
    std::string msg = PQerrorMessage(c);
    PQfinish(c);
    throw std::runtime_error(who + ": connect: " + msg);
  }
  return c;
}

// Runs `sql` on `c`; throws naming `who` if the server refused it.
void exec_on(PGconn* c, const std::string& sql, const std::string& who) {
  PGresult* r = PQexec(c, sql.c_str());
  auto st = PQresultStatus(r);
  std::string msg = PQresultErrorMessage(r);
  PQclear(r);
  if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
    throw std::runtime_error(who + ": " + sql + ": " + msg);
  }
}

// dlock's statement deletes the session row, then its entries (a data-modifying WITH that
// the main query does not read runs last). This transaction holds the entries, then asks for
// the session row; the statement, waiting longer, runs the deadlock check first and is the
// one aborted.
class postgres_deadlock_maker final : public deadlock_maker {
 public:
  postgres_deadlock_maker(std::uint16_t port, std::string session_id)
      : c_(connect_as_dlock(port, "deadlock maker")), id_(std::move(session_id)) {}
  ~postgres_deadlock_maker() override { PQfinish(c_); }

  void lock_first() override {
    exec("BEGIN");
    exec("SELECT 1 FROM dlock.entries WHERE session = '" + id_ + "' FOR UPDATE");
  }
  void close_cycle() override {
    exec("UPDATE dlock.sessions SET owner = owner WHERE id = '" + id_ + "'");
    exec("COMMIT");
  }

 private:
  void exec(const std::string& sql) { exec_on(c_, sql, "deadlock maker"); }

  PGconn* c_;
  std::string id_;
};

class postgres_table_lock final : public table_lock {
 public:
  explicit postgres_table_lock(std::uint16_t port) : c_(connect_as_dlock(port, "table lock")) {
    try {
      exec_on(c_, "BEGIN; LOCK TABLE dlock.entries IN ACCESS EXCLUSIVE MODE", "table lock");
    } catch (...) {
      PQfinish(c_);
      throw;
    }
  }
  ~postgres_table_lock() override {
    PQclear(PQexec(c_, "COMMIT"));
    PQfinish(c_);
  }

 private:
  PGconn* c_;
};

class postgres_admin final : public sql_admin {
 public:
  std::string url(const std::string& user, const std::string& password,
                  const std::string& query) override {
    return "postgres://" + user + ":" + password + "@127.0.0.1:" + std::to_string(pg_.port()) +
           "/dlock" + (query.empty() ? "" : "?" + postgres_query(query));
  }
  std::uint16_t port() override { return pg_.port(); }
  std::string url_missing_db() override {
    return "postgresql://dlock:secret@127.0.0.1:" + std::to_string(pg_.port()) + "/no_such_db";
  }
  void create_user(const std::string& user, const std::string& password) override {
    // Members of role dlock use the tables and functions role dlock created.
    pg_.query("CREATE ROLE " + user + " LOGIN PASSWORD '" + password + "' IN ROLE dlock", {},
              "postgres");
  }
  bool end_idle_connections_of(const std::string& user, int seconds) override {
    pg_.query(
        "ALTER ROLE " + user + " SET idle_session_timeout = '" + std::to_string(seconds) + "s'", {},
        "postgres");
    return true;
  }
  bool make_read_only(const std::string& user) override {
    pg_.query("ALTER ROLE " + user + " SET default_transaction_read_only = on", {}, "postgres");
    return true;
  }
  int kill_connections(const std::string& user) override {
    auto r = pg_.query(
        "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_stat_activity"
        " WHERE usename = $1",
        {user}, "postgres");
    return std::stoi(r.at(0));
  }
  void stop() override { pg_.stop(); }
  void start() override { pg_.start(); }
  std::vector<std::string> stored_names(const std::string& name) override {
    return pg_.query("SELECT name FROM dlock.entries WHERE name = $1", {name});
  }
  std::size_t entry_rows(const std::string& lock) override {
    return std::stoul(
        pg_.query("SELECT count(*) FROM dlock.entries WHERE name = $1", {lock}).at(0));
  }
  std::size_t stored_rows(const std::string& lock) override { return entry_rows(lock); }
  void delete_entries(const std::string& lock) override {
    pg_.query("DELETE FROM dlock.entries WHERE name = $1", {lock});
  }
  std::unique_ptr<table_lock> lock_entries_table() override {
    return std::make_unique<postgres_table_lock>(pg_.port());
  }
  std::size_t session_rows() override {
    return std::stoul(pg_.query("SELECT count(*) FROM dlock.sessions").at(0));
  }
  std::unique_ptr<deadlock_maker> deadlock_end_of(const std::string& session_id) override {
    return std::make_unique<postgres_deadlock_maker>(pg_.port(), session_id);
  }
  int lock_waits() override {
    return std::stoi(pg_.query("SELECT count(*) FROM pg_stat_activity"
                               " WHERE datname = 'dlock' AND wait_event_type = 'Lock'",
                               {}, "postgres")
                         .at(0));
  }

 private:
  postgres_server pg_;
};

}  // namespace

sql_admin& admin() {
  static postgres_admin a;
  return a;
}

}  // namespace dlock::test
