#pragma once
// A raw connection to a SQLite lock file, for the tests: what dlock's API does not show (its
// tables), and what another program's connection does to the file (a long transaction).
#include <sqlite3.h>

#include <stdexcept>
#include <string>

namespace dlock::test {

// A raw connection to the database file, for what dlock's API does not show.
class raw_db {
 public:
  explicit raw_db(const std::string& path) {
    if (sqlite3_open(path.c_str(), &h_) != SQLITE_OK) throw std::runtime_error("open " + path);
    sqlite3_busy_timeout(h_, 5000);
  }
  ~raw_db() { sqlite3_close(h_); }
  // Runs `sql`; returns "" on success, else the error message.
  std::string exec(const std::string& sql) {
    char* err = nullptr;
    if (sqlite3_exec(h_, sql.c_str(), nullptr, nullptr, &err) == SQLITE_OK) return {};
    std::string msg = err ? err : "error";
    sqlite3_free(err);
    return msg;
  }
  // Column 0 of the first row of `sql` as text ("" if none).
  std::string one(const std::string& sql) {
    sqlite3_stmt* s = nullptr;
    std::string out;
    if (sqlite3_prepare_v2(h_, sql.c_str(), -1, &s, nullptr) != SQLITE_OK)
      throw std::runtime_error(sqlite3_errmsg(h_));
    if (sqlite3_step(s) == SQLITE_ROW && sqlite3_column_text(s, 0))
      out = reinterpret_cast<const char*>(sqlite3_column_text(s, 0));
    sqlite3_finalize(s);
    return out;
  }

 private:
  sqlite3* h_{nullptr};
};

}  // namespace dlock::test
