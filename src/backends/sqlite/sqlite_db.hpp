#pragma once
// A thin RAII layer over the sqlite3 C API: one connection, prepared statements, errors
// mapped onto dlock codes (SQLITE_BUSY/LOCKED -> backend_unavailable, which is retried).

#include <sqlite3.h>
#include <sys/stat.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "core/result.hpp"

namespace dlock::detail::sqlite {

class stmt {
 public:
  // owned: finalize on destruction; else (a cached statement) reset it for the next use.
  stmt(sqlite3* db, sqlite3_stmt* s, bool owned = true) : db_(db), s_(s), owned_(owned) {}
  stmt(stmt&& o) noexcept : db_(o.db_), s_(o.s_), owned_(o.owned_) { o.s_ = nullptr; }
  stmt(const stmt&) = delete;
  ~stmt() {
    if (owned_) {
      sqlite3_finalize(s_);
    } else if (s_) {
      sqlite3_reset(s_);
      sqlite3_clear_bindings(s_);
    }
  }

  stmt& bind(int i, std::string_view v) {
    sqlite3_bind_text(s_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
    return *this;
  }
  // Bytes, not text: a value may hold any byte, NUL included.
  stmt& bind_blob(int i, std::string_view v) {
    sqlite3_bind_blob(s_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
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
  std::string blob(int col) const {
    auto p = sqlite3_column_blob(s_, col);
    return p ? std::string(static_cast<const char*>(p), sqlite3_column_bytes(s_, col))
             : std::string{};
  }
  std::string text(int col) const {
    auto p = sqlite3_column_text(s_, col);
    return p ? std::string(reinterpret_cast<const char*>(p), sqlite3_column_bytes(s_, col))
             : std::string{};
  }

 private:
  sqlite3* db_;
  sqlite3_stmt* s_;
  bool owned_;
};

class db {
 public:
  static result<db> open(const std::string& path, int busy_timeout_ms);
  // Read-only, for a user who may only read the file: SQLITE_OPEN_READONLY, which reads a
  // WAL database while another connection keeps its -shm; when nobody does (no -wal file:
  // the last connection checkpointed everything into the main file), the file is read as
  // immutable, since a read-only reader cannot create the -shm.
  // Its probe read, the first to meet a writer's lock, waits until `open_until` at most.
  static result<db> open_read_only(const std::string& path, int busy_timeout_ms,
                                   std::chrono::steady_clock::time_point open_until);
  db(db&& o) noexcept
      : h_(o.h_),
        path_(std::move(o.path_)),
        reached_(std::move(o.reached_)),
        opened_(o.opened_),
        wal_path_(std::move(o.wal_path_)),
        wal_(o.wal_),
        given_is_resolved_(o.given_is_resolved_),
        snapshot_(o.snapshot_),
        cache_(std::move(o.cache_)),
        busy_(std::move(o.busy_)) {
    o.h_ = nullptr;
    o.cache_.clear();
  }
  db(const db&) = delete;
  // Closes this connection and takes `o`'s (an observer following its path to a new file).
  db& operator=(db&& o) noexcept {
    if (this != &o) {
      db gone(std::move(*this));
      h_ = o.h_;
      path_ = std::move(o.path_);
      reached_ = std::move(o.reached_);
      opened_ = o.opened_;
      wal_path_ = std::move(o.wal_path_);
      wal_ = o.wal_;
      given_is_resolved_ = o.given_is_resolved_;
      snapshot_ = o.snapshot_;
      cache_ = std::move(o.cache_);
      busy_ = std::move(o.busy_);
      o.h_ = nullptr;
      o.cache_.clear();
    }
    return *this;
  }
  ~db();

  // A statement prepared once per connection and reused: `sql` must be a string literal
  // (its address is the cache key). One use at a time per statement.
  result<stmt> prepare(const char* sql);
  result<void> exec(const char* sql);
  int changes() const { return sqlite3_changes(h_); }
  // Whether the file this connection opened is no longer the one at its path (deleted,
  // renamed, or replaced by another file): SQLITE_FCNTL_HAS_MOVED, one stat() of the path
  // SQLite resolved, and one of the path as given, through its symlinks (re-pointed, a
  // symlink on it leads to another file: a tester's deploy-style `current -> r2` gave two
  // holders one token).
  bool moved() const;
  // Whether the write-ahead log this connection has open is no longer the one at its path
  // (deleted, or replaced): a process that opens the file now makes a new log and reads the
  // database as of its last checkpoint, without this connection's recent writes (a tester's
  // `rm locks.db-wal locks.db-shm` gave a second holder the same token). Its identity is taken
  // at the first call after this connection opened it; while any connection has it open, no
  // SQLite connection deletes it (the closer's checkpoint needs the file to itself).
  bool wal_replaced() const;
  const std::string& path() const { return path_; }
  // Opened read-only as immutable (open_read_only): a snapshot, which never shows a change.
  bool snapshot() const { return snapshot_; }
  // Until set back to nothing, every busy wait also ends at `until`: the statements of
  // session::open share its budget, where each would wait the whole busy timeout.
  void bound_busy_waits(std::optional<std::chrono::steady_clock::time_point> until) {
    busy_->until = until;
  }
  // The file as SQLite names it: absolute, symlinks resolved. Where its -wal and -shm are,
  // and so where every file kept beside the database must be, whatever path reached it.
  std::string file_name() const;

 private:
  // A retry of a busy file, bounded by its timeout: see on_busy in sqlite_db.cpp.
  struct busy_retry {
    std::chrono::milliseconds timeout;
    std::chrono::steady_clock::time_point since{};
    std::optional<std::chrono::steady_clock::time_point> until{};
  };
  db(sqlite3* h, std::string path, int busy_timeout_ms);
  static int on_busy(void* retry, int attempts);
  struct file_id {
    dev_t dev{};
    ino_t ino{};
  };
  sqlite3* h_;
  std::string path_;
  std::string reached_;                 // path_ made absolute, symlinks kept
  std::optional<file_id> opened_;       // the file SQLite opened, when stat() could tell
  std::string wal_path_;                // file_name() + "-wal"
  mutable std::optional<file_id> wal_;  // the log this connection opened (wal_replaced)
  bool given_is_resolved_{false};       // reached_ is file_name(): no symlink on the path
  bool snapshot_{false};
  std::unordered_map<const char*, sqlite3_stmt*> cache_;
  std::unique_ptr<busy_retry> busy_;  // its address is the handler's: stable across moves
};

// Maps a sqlite result code to a dlock failure naming `what`.
failure map_error(sqlite3* h, int rc, std::string_view what);
// Why `path` cannot be opened (write: for writing), when the cause is a file or directory
// permission; nothing when it is not.
std::optional<std::string> explain_access(const std::string& path, bool write);

}  // namespace dlock::detail::sqlite
