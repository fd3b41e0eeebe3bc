// SQLite: INSERT + DELETE of one row, each its own transaction, in WAL mode with
// synchronous=NORMAL as dlock's sqlite backend runs. A file next to the URL's, so dlock's own
// schema is never touched. No blocking primitive: no contended floor.
#include <sqlite3.h>

#include <stdexcept>

#include "floor_common.hpp"

namespace dlock::floor {
namespace {

class sqlite_client final : public client {
 public:
  explicit sqlite_client(const target& t) {
    if (sqlite3_open(((t.path.empty() ? "/tmp/dlock-floor" : t.path) + ".floor").c_str(), &db_) !=
        SQLITE_OK) {
      throw std::runtime_error("sqlite: cannot open");
    }
    sqlite3_busy_timeout(db_, 5000);
    exec(
        "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"
        "CREATE TABLE IF NOT EXISTS dlock_floor (name TEXT PRIMARY KEY); DELETE FROM dlock_floor;");
  }
  ~sqlite_client() override { sqlite3_close(db_); }
  void cycle() override {
    exec("INSERT INTO dlock_floor (name) VALUES ('x')");
    exec("DELETE FROM dlock_floor WHERE name = 'x'");
  }
  std::string what() const override {
    return "libsqlite3: INSERT + DELETE (WAL, synchronous=NORMAL)";
  }

 private:
  void exec(const char* sql) {
    char* err = nullptr;
    if (sqlite3_exec(db_, sql, nullptr, nullptr, &err) != SQLITE_OK) {
      std::string m = err ? err : "error";
      sqlite3_free(err);
      throw std::runtime_error("sqlite: " + m);
    }
  }
  sqlite3* db_{nullptr};
};

}  // namespace

std::unique_ptr<client> make_sqlite(const target& t) { return std::make_unique<sqlite_client>(t); }

}  // namespace dlock::floor
