// The MySQL/MariaDB schema's upgrade in place (version 2 -> version 4: entries with values,
// then doorbells): a live hold of a version-2 client is kept, that client goes on working
// while and after today's dlock upgrades the tables under it, and elections then work on them.
#include <gtest/gtest.h>
#include <mysql.h>
#include <mysqld_error.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <dlock/dlock.hpp>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "support/mariadb_server.hpp"
#include "support/net.hpp"
#include "support/poll.hpp"

namespace dlock::test {
namespace {

using namespace std::chrono_literals;

// dlock's version-2 DDL, verbatim (a data file), one statement per element.
std::vector<std::string> schema_v2() {
  std::ifstream in(DLOCK_SOURCE_DIR "/tests/sql/data/mysql_schema_2.sql");
  if (!in) throw std::runtime_error("mysql_schema_2.sql not found");
  std::vector<std::string> out;
  std::string line, sql;
  auto flush = [&] {
    // A chunk of comments alone (the file's header) is no statement.
    bool code = false;
    std::istringstream lines(sql);
    for (std::string l; std::getline(lines, l);) code |= !l.empty() && l.rfind("--", 0) != 0;
    if (code) out.push_back(sql);
    sql.clear();
  };
  while (std::getline(in, line)) {
    if (line == "$$") {
      flush();
    } else {
      sql += (sql.empty() ? "" : "\n") + line;
    }
  }
  flush();
  return out;
}

#define DLOCK_NOW "CAST(UNIX_TIMESTAMP(NOW(6)) * 1000 AS SIGNED)"
#define DLOCK_CONNECTED(s)                \
  "(" s                                   \
  ".conn IS NULL OR IFNULL(IS_USED_LOCK(" \
  "CONCAT('dlock_session:', " s ".id)), 0) = " s ".conn)"

// What a version-2 client runs for its session, verbatim (my_schema.cpp's statements).
const std::string v2_take_session = "SELECT GET_LOCK(?, 0)";
const std::string v2_open_session =
    "INSERT INTO dlock_sessions(id, owner, expires_ms, conn) VALUES (?, ?, " DLOCK_NOW
    " + ?, CONNECTION_ID())"
    " ON DUPLICATE KEY UPDATE id = id";
const std::string v2_enqueue = "CALL dlock_enqueue(?, ?, ?, ?)";
const std::string v2_list = "CALL dlock_queue(?, ?)";
const std::string v2_remove =
    "DELETE e FROM dlock_entries e JOIN dlock_sessions s ON s.id = e.session"
    " WHERE e.name = ? AND e.id = ? AND e.session = ? AND s.expires_ms > " DLOCK_NOW;
const std::string v2_keep_alive = "UPDATE dlock_sessions SET expires_ms = " DLOCK_NOW
                                  " + ?"
                                  " WHERE id = ? AND expires_ms > " DLOCK_NOW
                                  " AND conn = CONNECTION_ID()"
                                  " AND " DLOCK_CONNECTED("dlock_sessions");

#undef DLOCK_CONNECTED
#undef DLOCK_NOW

// A failed statement, with the server's error number.
struct sql_error : std::runtime_error {
  sql_error(const std::string& what, unsigned code) : std::runtime_error(what), code(code) {}
  unsigned code;
};

// The errors version-2 dlock retries (it maps them to backend_unavailable): two clients'
// statements crossing, not a fault of the schema.
bool retried_by_v2(unsigned code) {
  return code == ER_CON_COUNT_ERROR || code == ER_LOCK_WAIT_TIMEOUT || code == ER_LOCK_DEADLOCK ||
         code == ER_QUERY_INTERRUPTED || code == ER_STATEMENT_TIMEOUT ||
         code == ER_NEED_REPREPARE || code == ER_DUP_ENTRY;
}

mariadb_server& server() {
  static mariadb_server s;
  return s;
}

// One connection of user dlock to database `db`, running statements as dlock does: DDL as
// text, everything else prepared once (a statement prepared before the upgrade is executed
// after it) with its parameters bound, every result set read.
class raw_client {
 public:
  struct reply {
    std::vector<std::vector<std::string>> rows;  // of the first result set with columns
    std::uint64_t affected{0};
  };

  explicit raw_client(const std::string& db) : m_(mysql_init(nullptr)) {
    if (!mysql_real_connect(m_, "127.0.0.1", "dlock", "secret", db.c_str(), server().port(),
                            nullptr, CLIENT_MULTI_RESULTS | CLIENT_FOUND_ROWS)) {
      fail("connect");
    }
  }
  raw_client(const raw_client&) = delete;
  ~raw_client() {
    for (auto& [sql, s] : stmts_) {
      if (s) mysql_stmt_close(s);
    }
    mysql_close(m_);
  }

  // A column that is there already is fine, as in dlock's own schema creation.
  void ddl(const std::string& sql) {
    if (mysql_query(m_, sql.c_str()) != 0 && mysql_errno(m_) != ER_DUP_FIELDNAME) fail(sql);
  }

  reply run(const std::string& sql, const std::vector<std::string>& params = {}) {
    MYSQL_STMT*& s = stmts_[sql];
    if (!s) {
      s = mysql_stmt_init(m_);
      if (mysql_stmt_prepare(s, sql.data(), sql.size()) != 0) fail(sql, s);
    }
    std::vector<MYSQL_BIND> binds(params.size());
    std::vector<unsigned long> lengths(params.size());
    for (std::size_t i = 0; i < params.size(); ++i) {
      lengths[i] = params[i].size();
      binds[i].buffer_type = MYSQL_TYPE_STRING;
      binds[i].buffer = const_cast<char*>(params[i].data());
      binds[i].buffer_length = lengths[i];
      binds[i].length = &lengths[i];
    }
    if ((!binds.empty() && mysql_stmt_bind_param(s, binds.data())) || mysql_stmt_execute(s)) {
      fail(sql, s);
    }
    reply out;
    bool have_rows = false;
    do {
      unsigned n = mysql_stmt_field_count(s);
      if (n == 0) {
        out.affected = mysql_stmt_affected_rows(s);
        continue;
      }
      std::vector<std::vector<char>> buf(n, std::vector<char>(20'000));
      std::vector<unsigned long> len(n);
      std::vector<my_bool> null(n);
      std::vector<MYSQL_BIND> b(n);
      for (unsigned c = 0; c < n; ++c) {
        b[c].buffer_type = MYSQL_TYPE_STRING;
        b[c].buffer = buf[c].data();
        b[c].buffer_length = buf[c].size();
        b[c].length = &len[c];
        b[c].is_null = &null[c];
      }
      if (mysql_stmt_bind_result(s, b.data())) fail(sql, s);
      while (mysql_stmt_fetch(s) == 0) {
        std::vector<std::string> row;
        for (unsigned c = 0; c < n; ++c) row.emplace_back(null[c] ? "" : buf[c].data(), len[c]);
        if (!have_rows) out.rows.push_back(std::move(row));
      }
      have_rows = true;
    } while (mysql_stmt_next_result(s) == 0);
    mysql_stmt_free_result(s);
    return out;
  }

 private:
  // A failed statement is prepared afresh next time, as dlock does.
  [[noreturn]] void fail(const std::string& what, MYSQL_STMT*& s) {
    sql_error e(what + ": " + mysql_stmt_error(s), mysql_stmt_errno(s));
    mysql_stmt_close(s);
    s = nullptr;
    throw e;
  }
  [[noreturn]] void fail(const std::string& what) {
    throw sql_error(what + ": " + mysql_error(m_), mysql_errno(m_));
  }

  MYSQL* m_;
  std::map<std::string, MYSQL_STMT*> stmts_;
};

// A version-2 client's session on its own connection: the connection holds the session's
// named lock for as long as the object lives, as in version 2.
class v2_session {
 public:
  v2_session(const std::string& db, std::string id) : c_(db), id_(std::move(id)) {
    if (c_.run(v2_take_session, {"dlock_session:" + id_}).rows.at(0).at(0) != "1") {
      throw std::runtime_error("session lock of " + id_ + " taken");
    }
    c_.run(v2_open_session, {id_, "version-2 client " + id_, "60000"});
  }
  raw_client::reply enqueue(const std::string& lock, const std::string& entry) {
    return c_.run(v2_enqueue, {id_, lock, entry, "0"});
  }
  raw_client::reply list(const std::string& lock) { return c_.run(v2_list, {lock, id_}); }
  std::uint64_t remove(const std::string& lock, const std::string& entry) {
    return c_.run(v2_remove, {lock, entry, id_}).affected;
  }
  std::uint64_t keep_alive() { return c_.run(v2_keep_alive, {"60000", id_}).affected; }
  const std::string& id() const { return id_; }

 private:
  raw_client c_;
  std::string id_;
};

// A database of its own holding dlock's version-2 tables and procedures.
class mysql_schema : public ::testing::Test {
 protected:
  void SetUp() override {
    server().query("CREATE DATABASE " + db_);
    server().query("GRANT ALL ON " + db_ + ".* TO 'dlock'@'%'");
    raw_client c(db_);
    for (const auto& sql : schema_v2()) c.ddl(sql);
  }
  std::string url() const {
    return "mysql://dlock:secret@127.0.0.1:" + std::to_string(server().port()) + "/" + db_ +
           "?ttl=2s";
  }
  // Column 0 of the first row of `sql`, run as root.
  static std::string one(const std::string& sql) { return server().query(sql).at(0); }

  std::string db_ = "v2_" + random_suffix();
};

// A version-2 database with a live hold, opened by today's code while another version-2
// client keeps working: upgraded in place, the hold and the counters kept; the version-2
// clients' calls never fail, during the upgrade or after it (the procedures keep their
// parameters and add columns only at the end of their rows); elections then work.
TEST_F(mysql_schema, a_version_2_schema_is_upgraded_in_place_and_version_2_clients_go_on) {
  v2_session holder(db_, "v2holder" + random_suffix());
  ASSERT_EQ(holder.enqueue("held", "held-entry").rows.at(0).at(0), "held-entry");

  // Several version-2 clients busy all through the upgrade, so that a moment in which a
  // procedure is missing (or a table changing) would fail one of their calls.
  std::atomic<bool> stop{false};
  std::atomic<int> rounds{0};
  std::mutex errors_mu;
  std::vector<std::string> errors;
  auto failed = [&](const std::string& what) {
    std::lock_guard lk(errors_mu);
    errors.push_back(what);
  };
  std::vector<std::thread> busy;
  for (int n = 0; n < 6; ++n) {
    busy.emplace_back([&, n] {
      try {
        v2_session c(db_, "v2busy" + random_suffix());
        for (int i = 0; !stop; ++i) {
          try {
            auto lock = "busy" + std::to_string(n);
            auto entry = "busy-" + std::to_string(n) + "-" + std::to_string(i);
            if (c.enqueue(lock, entry).rows.empty()) failed("enqueue: no rows");
            if (c.list(lock).rows.empty()) failed("list: no rows");
            if (c.remove(lock, entry) != 1) failed("remove: not removed");
            if (c.keep_alive() != 1) failed("keep_alive: lapsed");
          } catch (const sql_error& e) {
            if (!retried_by_v2(e.code)) failed(e.what());
          }
          ++rounds;
        }
      } catch (const std::exception& e) {
        failed(e.what());
      }
    });
  }
  auto wait_rounds = [&](int n) { poll_until([&] { return rounds >= n; }, 30s, 1ms); };
  wait_rounds(100);
  auto s = dlock::session::open(url());
  const int upgraded_at = rounds;
  wait_rounds(upgraded_at + 100);
  stop = true;
  for (auto& t : busy) t.join();
  EXPECT_GE(rounds.load(), upgraded_at + 100) << "the version-2 clients stalled";
  EXPECT_TRUE(errors.empty()) << errors.size() << " calls of version-2 clients failed, first "
                              << errors.front();

  EXPECT_EQ(one("SELECT v FROM " + db_ + ".dlock_meta WHERE k = 'schema_version'"), "5");
  EXPECT_EQ(one("SELECT version FROM " + db_ + ".dlock_entries WHERE id = 'held-entry'"), "0");
  dlock::mutex held(s, "held");
  EXPECT_FALSE(held.try_lock()) << "the live version-2 hold was lost in the upgrade";
  auto q = dlock::inspect(s, "held");
  ASSERT_EQ(q.size(), 1u);
  EXPECT_TRUE(q[0].holds);
  EXPECT_EQ(q[0].token, 1u);

  // What the version-2 client reads by position is where it was.
  auto rows = holder.list("held").rows;
  ASSERT_EQ(rows.size(), 1u);
  ASSERT_GE(rows[0].size(), 6u);
  EXPECT_EQ(rows[0][0], "held-entry");
  EXPECT_EQ(rows[0][1], "0");
  EXPECT_EQ(rows[0][2], "1");
  EXPECT_EQ(rows[0][4], "version-2 client " + holder.id());
  EXPECT_GT(std::stoll(rows[0][5]), 0);
  // Its release hands the lock to today's client, with a larger token. Today's client is
  // already waiting: the version-2 holder took no doorbell, so the waiter gets it at once, finds
  // the entry still listed, and polls it from then on.
  // (Not a spin on the free doorbell: a poll every 1-16 ms is some 40 statements in 500 ms.)
  auto questions = [] {
    return std::stoll(server()
                          .query("SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS"
                                 " WHERE VARIABLE_NAME = 'QUESTIONS'")
                          .at(0));
  };
  const auto asked = questions();
  std::uint64_t removed = 0;
  std::jthread release([&] {
    std::this_thread::sleep_for(500ms);
    removed = holder.remove("held", "held-entry");
  });
  ASSERT_TRUE(held.try_lock_for(5s));
  release.join();
  EXPECT_EQ(removed, 1u);
  const auto waited = questions() - asked;
  std::printf("statements while waiting on a version-2 holder: %lld\n", waited);
  EXPECT_LT(waited, 400);
  EXPECT_GT(held.token().value, 1u);
  held.unlock();

  dlock::election e(s, "primary");
  auto lead = e.try_campaign_for("here", 5s);
  ASSERT_TRUE(lead);
  lead.proclaim("there");
  auto l = dlock::election(dlock::session::open(url()), "primary").leader();
  ASSERT_TRUE(l);
  EXPECT_EQ(l->value, "there");
  EXPECT_EQ(l->version, 2u);
}

// Several clients opening a version-2 database at once upgrade it once and all go on; an
// upgrade cut off after its first column (the client died) is finished by the next opener.
TEST_F(mysql_schema, concurrent_and_interrupted_upgrades_finish) {
  {
    raw_client c(db_);
    c.ddl("ALTER TABLE dlock_entries ADD COLUMN value VARBINARY(16384) NOT NULL DEFAULT ''");
  }
  std::vector<std::thread> openers;
  std::atomic<int> opened{0};
  std::vector<std::string> errors(4);
  for (std::size_t i = 0; i < errors.size(); ++i) {
    openers.emplace_back([&, i] {
      try {
        auto s = dlock::session::open(url());
        dlock::election e(s, "primary-" + std::to_string(i));
        auto lead = e.try_campaign_for("v" + std::to_string(i), 5s);
        if (lead) ++opened;
      } catch (const std::exception& e) {
        errors[i] = e.what();
      }
    });
  }
  for (auto& t : openers) t.join();
  for (const auto& e : errors) EXPECT_EQ(e, "");
  EXPECT_EQ(opened.load(), 4);
  EXPECT_EQ(one("SELECT v FROM " + db_ + ".dlock_meta WHERE k = 'schema_version'"), "5");
}

// A schema from a newer dlock is refused, not rewritten.
// Version 5 from before lease-only sessions (routines revision 2): the routines are replaced
// at the next open, so a session through a hop can enqueue (the old dlock_enqueue_bell refused
// a session row that names no connection).
TEST_F(mysql_schema, older_routines_of_the_same_version_are_replaced) {
  { auto s = dlock::session::open(url()); }
  server().query("DELETE FROM " + db_ + ".dlock_meta WHERE k = 'routines'");
  auto s = dlock::session::open(url());
  EXPECT_EQ(one("SELECT v FROM " + db_ + ".dlock_meta WHERE k = 'routines'"), "2");
  EXPECT_EQ(one("SELECT v FROM " + db_ + ".dlock_meta WHERE k = 'schema_version'"), "5");
}

TEST_F(mysql_schema, a_newer_schema_is_refused) {
  server().query("UPDATE " + db_ + ".dlock_meta SET v = '6' WHERE k = 'schema_version'");
  std::error_code ec;
  auto s = dlock::session::open(url(), {}, ec);
  EXPECT_FALSE(s);
  EXPECT_EQ(ec, dlock::errc::backend_error) << ec.message();
  EXPECT_EQ(one("SELECT v FROM " + db_ + ".dlock_meta WHERE k = 'schema_version'"), "6");
}

}  // namespace
}  // namespace dlock::test
