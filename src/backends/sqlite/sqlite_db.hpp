#pragma once
// A thin RAII layer over the sqlite3 C API: one connection, prepared statements, errors
// mapped onto dlock codes (SQLITE_BUSY/LOCKED -> backend_unavailable, which is retried).

#include <sqlite3.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "core/result.hpp"

namespace dlock::detail::sqlite {

class stmt {
 public:
  stmt(sqlite3* db, sqlite3_stmt* s) : db_(db), s_(s) {}
  stmt(stmt&& o) noexcept : db_(o.db_), s_(o.s_) { o.s_ = nullptr; }
  stmt(const stmt&) = delete;
  ~stmt() { sqlite3_finalize(s_); }

  stmt& bind(int i, std::string_view v) {
    sqlite3_bind_text(s_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
    return *this;
  }
  stmt& bind(int i, std::int64_t v) {
    sqlite3_bind_int64(s_, i, v);
    return *this;
  }
  // true: a row is ready; false: done. Errors are mapped.
  result<bool> step();
  result<void> run();  // step to the end, ignoring rows
  std::int64_t i64(int col) const { return sqlite3_column_int64(s_, col); }
  std::string text(int col) const {
    auto p = sqlite3_column_text(s_, col);
    return p ? std::string(reinterpret_cast<const char*>(p), sqlite3_column_bytes(s_, col))
             : std::string{};
  }

 private:
  sqlite3* db_;
  sqlite3_stmt* s_;
};

class db {
 public:
  static result<db> open(const std::string& path, int busy_timeout_ms);
  db(db&& o) noexcept : h_(o.h_), path_(std::move(o.path_)) { o.h_ = nullptr; }
  db(const db&) = delete;
  ~db() { sqlite3_close_v2(h_); }

  result<stmt> prepare(std::string_view sql);
  result<void> exec(const char* sql);
  int changes() const { return sqlite3_changes(h_); }
  const std::string& path() const { return path_; }

 private:
  db(sqlite3* h, std::string path) : h_(h), path_(std::move(path)) {}
  sqlite3* h_;
  std::string path_;
};

// Maps a sqlite result code to a dlock failure naming `what`.
failure map_error(sqlite3* h, int rc, std::string_view what);

}  // namespace dlock::detail::sqlite
