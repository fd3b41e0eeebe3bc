// The conformance suite on sqlite:// (processes on one host sharing a file).
#include <sqlite3.h>

#include <stdexcept>

#include "conformance/suite.hpp"

namespace dlock::test {
namespace {

class write_locked final : public stalled_server {
 public:
  explicit write_locked(const std::string& path) {
    if (sqlite3_open(path.c_str(), &db_) != SQLITE_OK ||
        sqlite3_exec(db_, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr) != SQLITE_OK) {
      throw std::runtime_error("cannot write-lock " + path);
    }
  }
  ~write_locked() override {
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    sqlite3_close(db_);
  }
  write_locked(const write_locked&) = delete;
  write_locked& operator=(const write_locked&) = delete;

 private:
  sqlite3* db_{nullptr};
};

class sqlite_fixture : public backend_fixture {
 public:
  std::string url() override { return "sqlite://" + path_ + "?ttl=2s"; }
  std::size_t raw_entries(const std::string& lock) override {
    return static_cast<std::size_t>(
        query("SELECT count(*) FROM dlock_entries WHERE name = ?1", lock));
  }
  void expire(const dlock::session& s) override {
    query("UPDATE dlock_sessions SET expires_boot_ms = 0 WHERE id = ?1", s.id());
  }
  // Another connection's write transaction: every write waits for the file (SQLITE_BUSY).
  std::unique_ptr<stalled_server> stall() override { return std::make_unique<write_locked>(path_); }

 private:
  // Runs one statement with one text parameter on a connection of our own; returns column 0.
  long long query(const char* sql, const std::string& arg) {
    sqlite3* db = nullptr;
    if (sqlite3_open(path_.c_str(), &db) != SQLITE_OK) throw std::runtime_error("open " + path_);
    sqlite3_busy_timeout(db, 5000);
    sqlite3_stmt* st = nullptr;
    long long value = 0;
    if (sqlite3_prepare_v2(db, sql, -1, &st, nullptr) == SQLITE_OK) {
      sqlite3_bind_text(st, 1, arg.data(), static_cast<int>(arg.size()), SQLITE_TRANSIENT);
      if (sqlite3_step(st) == SQLITE_ROW) value = sqlite3_column_int64(st, 0);
    } else {
      value = 0;  // no table yet: nothing stored
    }
    sqlite3_finalize(st);
    sqlite3_close(db);
    return value;
  }

  temp_dir dir_{"dlock-sqlite"};
  std::string path_ = dir_.path() + "/locks.db";
};

INSTANTIATE_TEST_SUITE_P(sqlite, conformance,
                         ::testing::Values(fixture_param{
                             "sqlite", [] { return std::make_unique<sqlite_fixture>(); }}),
                         param_name);

}  // namespace
}  // namespace dlock::test
