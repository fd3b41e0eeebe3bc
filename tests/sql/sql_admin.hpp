#pragma once
// What the SQL fault tests (fault_tests.cpp) need from a server, so that one set of test
// bodies runs against PostgreSQL (postgres_admin.cpp) and MariaDB (mysql_admin.cpp). Each
// test executable links one implementation; its server starts once per executable.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace dlock::test {

// An open transaction on its own connection that makes the statement ending a session (what
// force_unlock runs) the server's deadlock victim: lock_first() takes a row lock that
// statement will wait for; once it waits, close_cycle() asks for a lock that statement holds
// or queues for, the server aborts the statement (MySQL error 1213, PostgreSQL 40P01), and
// close_cycle() returns with the transaction committed. Throws std::runtime_error if the
// server aborted this transaction instead (the set-up failed, not dlock).
class deadlock_maker {
 public:
  virtual ~deadlock_maker() = default;
  virtual void lock_first() = 0;
  virtual void close_cycle() = 0;
};

// An exclusive lock on dlock's entries table, taken on its own connection (a DBA's
// `LOCK TABLE`, or a schema change waiting for it): every statement reading the table waits
// until it is destroyed.
class table_lock {
 public:
  virtual ~table_lock() = default;
};

class sql_admin {
 public:
  virtual ~sql_admin() = default;
  // A dlock URL for `user`:`password` on the test database, with `query` appended.
  virtual std::string url(const std::string& user, const std::string& password,
                          const std::string& query = "") = 0;
  // The server's port on 127.0.0.1 (url() connects there).
  virtual std::uint16_t port() = 0;
  // The same server, a database that does not exist.
  virtual std::string url_missing_db() = 0;
  // A login that may use dlock's tables (created before by the "dlock" user).
  virtual void create_user(const std::string& user, const std::string& password) = 0;
  // Makes the server end `user`'s connections after `seconds` without a statement, by a
  // setting of that user's own, as a DBA would (PostgreSQL: ALTER ROLE ... SET
  // idle_session_timeout); false where the server has none per user (MariaDB, whose
  // wait_timeout dlock raises per connection: sql_mysql_timeout tests that).
  virtual bool end_idle_connections_of(const std::string& user, int seconds) = 0;
  // Makes every transaction of `user` read-only; false where the server cannot, per user.
  virtual bool make_read_only(const std::string& user) {
    (void)user;
    return false;
  }
  // Terminates every connection of `user` from the server side; returns how many.
  virtual int kill_connections(const std::string& user) = 0;
  // Clean stop and start on the same port.
  virtual void stop() = 0;
  virtual void start() = 0;
  // Names in the entries table byte-equal to `name` (read back from the server).
  virtual std::vector<std::string> stored_names(const std::string& name) = 0;
  // Rows of the entries table for `lock`, lapsed ones included.
  virtual std::size_t entry_rows(const std::string& lock) = 0;
  // Rows of the entries table for `lock` as stored, released entries whose rows wait for
  // their session to delete them included (MySQL).
  virtual std::size_t stored_rows(const std::string& lock) = 0;
  // Deletes every row of the entries table for `lock`, as a DELETE by hand would.
  virtual void delete_entries(const std::string& lock) = 0;
  // Locks the entries table against every other connection, readers included, until the
  // returned object is destroyed.
  virtual std::unique_ptr<table_lock> lock_entries_table() = 0;
  // Rows of the sessions table.
  virtual std::size_t session_rows() = 0;
  // For session `session_id` (dlock::session::id()); see deadlock_maker.
  virtual std::unique_ptr<deadlock_maker> deadlock_end_of(const std::string& session_id) = 0;
  // Statements of the test database now waiting for a row lock.
  virtual int lock_waits() = 0;
};

// The server of this test executable, started on first use.
sql_admin& admin();

}  // namespace dlock::test
