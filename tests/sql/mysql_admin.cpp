// The MariaDB side of the SQL fault tests.
#include <mysql.h>

#include <stdexcept>

#include "sql/sql_admin.hpp"
#include "support/mariadb_server.hpp"
#include "support/mode_apart.hpp"

namespace dlock::test {
namespace {

// An entry row still queued (the backend's DLOCK_QUEUED, my_schema.cpp).
constexpr const char* mysql_queued_only =
    " AND (e.bell = 0 OR IS_USED_LOCK(CONCAT('dlock:e:', LEFT(SHA2(e.id, 256), 40))) IS NOT NULL)";

// InnoDB aborts the transaction that has done less (rows changed, locks held): rows inserted
// into a ballast table make this one the heavier, so dlock's statement is the victim.
class mysql_deadlock_maker final : public deadlock_maker {
 public:
  mysql_deadlock_maker(std::uint16_t port, std::string session_id) : id_(std::move(session_id)) {
    m_ = mysql_init(nullptr);
    if (!mysql_real_connect(m_, "127.0.0.1", "dlock", "secret", "dlock", port, nullptr, 0)) {
      check(false, "connect");
    }
  }
  ~mysql_deadlock_maker() override { mysql_close(m_); }

  void lock_first() override {
    exec("CREATE TABLE IF NOT EXISTS dlock_test_ballast(i INT) ENGINE=InnoDB");
    exec("START TRANSACTION");
    std::string rows;
    for (int i = 0; i < 200; ++i) rows += (i ? ",(" : "(") + std::to_string(i) + ")";
    exec("INSERT INTO dlock_test_ballast VALUES " + rows);
    exec("SELECT id FROM dlock_sessions WHERE id = '" + id_ + "' LOCK IN SHARE MODE");
  }
  void close_cycle() override {
    exec("UPDATE dlock_sessions SET owner = owner WHERE id = '" + id_ + "'");
    exec("COMMIT");
  }

 private:
  void check(bool ok, const std::string& what) {
    if (!ok) throw std::runtime_error("deadlock maker: " + what + ": " + mysql_error(m_));
  }
  void exec(const std::string& sql) {
    check(mysql_query(m_, sql.c_str()) == 0, sql);
    if (MYSQL_RES* r = mysql_store_result(m_)) mysql_free_result(r);
  }

  MYSQL* m_;
  std::string id_;
};

class mysql_table_lock final : public table_lock {
 public:
  explicit mysql_table_lock(std::uint16_t port) {
    m_ = mysql_init(nullptr);
    if (!mysql_real_connect(m_, "127.0.0.1", "dlock", "secret", "dlock", port, nullptr, 0) ||
        mysql_query(m_, "LOCK TABLES dlock_entries WRITE") != 0) {
      std::string msg = mysql_error(m_);
      mysql_close(m_);
      throw std::runtime_error("table lock: " + msg);
    }
  }
  ~mysql_table_lock() override {
    mysql_query(m_, "UNLOCK TABLES");
    mysql_close(m_);
  }

 private:
  MYSQL* m_;
};

class mysql_admin final : public sql_admin {
 public:
  std::string url(const std::string& user, const std::string& password,
                  const std::string& query) override {
    return "mysql://" + user + ":" + password + "@127.0.0.1:" + std::to_string(db_.port()) + "/" +
           mariadb_database(query) + (query.empty() ? "" : "?" + query);
  }
  std::uint16_t port() override { return db_.port(); }
  std::string url_missing_db() override {
    return "mariadb://dlock:secret@127.0.0.1:" + std::to_string(db_.port()) + "/no_such_db";
  }
  void create_user(const std::string& user, const std::string& password) override {
    db_.query("CREATE USER '" + user + "'@'%' IDENTIFIED BY '" + password + "'");
    db_.query("GRANT ALL ON dlock.* TO '" + user + "'@'%'");
    db_.query(std::string("GRANT ALL ON ") + advisory_place + ".* TO '" + user + "'@'%'");
  }
  bool end_idle_connections_of(const std::string&, int) override { return false; }
  int kill_connections(const std::string& user) override {
    auto ids = db_.query("SELECT id FROM information_schema.processlist WHERE user = ?", {user});
    for (const auto& id : ids) db_.query("KILL CONNECTION " + std::to_string(std::stoll(id)));
    return static_cast<int>(ids.size());
  }
  void stop() override { db_.stop(); }
  void start() override { db_.start(); }
  // Entries still queued: a released entry whose row waits for its session's next commit
  // (my_schema.cpp, DLOCK_QUEUED) is not counted.
  std::vector<std::string> stored_names(const std::string& name) override {
    return db_.query("SELECT name FROM dlock.dlock_entries e WHERE name = CAST(? AS BINARY)" +
                         std::string(mysql_queued_only),
                     {name});
  }
  std::size_t entry_rows(const std::string& lock) override {
    return std::stoul(
        db_.query("SELECT count(*) FROM dlock.dlock_entries e WHERE name = CAST(? AS BINARY)" +
                      std::string(mysql_queued_only),
                  {lock})
            .at(0));
  }
  std::size_t stored_rows(const std::string& lock) override {
    return std::stoul(
        db_.query("SELECT count(*) FROM dlock.dlock_entries WHERE name = CAST(? AS BINARY)", {lock})
            .at(0));
  }
  void delete_entries(const std::string& lock) override {
    db_.query("DELETE FROM dlock.dlock_entries WHERE name = CAST(? AS BINARY)", {lock});
  }
  std::unique_ptr<table_lock> lock_entries_table() override {
    return std::make_unique<mysql_table_lock>(db_.port());
  }
  std::size_t session_rows() override {
    return std::stoul(db_.query("SELECT count(*) FROM dlock.dlock_sessions").at(0));
  }
  std::unique_ptr<deadlock_maker> deadlock_end_of(const std::string& session_id) override {
    return std::make_unique<mysql_deadlock_maker>(db_.port(), session_id);
  }
  // InnoDB lists a waiting autocommit statement's transaction nowhere (information_schema
  // shows only started ones), so: statements of the test users busy for over 200 ms.
  int lock_waits() override {
    return std::stoi(db_.query("SELECT count(*) FROM information_schema.processlist"
                               " WHERE db = 'dlock' AND command = 'Execute' AND time_ms > 200")
                         .at(0));
  }

 private:
  mariadb_server db_;
};

}  // namespace

sql_admin& admin() {
  static mysql_admin a;
  return a;
}

}  // namespace dlock::test
