#include "backends/sqlite/sqlite_db.hpp"

#include <grp.h>
#include <pwd.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <thread>

#include "core/caller_deadline.hpp"

namespace dlock::detail::sqlite {

failure map_error(sqlite3* h, int rc, std::string_view what) {
  std::string msg = std::string(what) + ": " + (h ? sqlite3_errmsg(h) : sqlite3_errstr(rc));
  // SQLite says only "disk I/O error"; the system's reason is what an operator can act on.
  if ((rc & 0xff) == SQLITE_IOERR || (rc & 0xff) == SQLITE_FULL) {
    const int e = h ? sqlite3_system_errno(h) : 0;
    rlimit fsize{};
    const bool limited = ::getrlimit(RLIMIT_FSIZE, &fsize) == 0 && fsize.rlim_cur != RLIM_INFINITY;
    if (e == EFBIG || (e == 0 && limited)) {
      msg += " (the process's file size limit, ulimit -f, is " +
             (limited ? std::to_string(fsize.rlim_cur) + " bytes" : std::string("reached")) + ")";
    } else if (e != 0) {
      msg += std::string(" (") + std::strerror(e) + ")";
    }
  }
  switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return {make_error_code(errc::backend_unavailable), msg};
    case SQLITE_CANTOPEN:
      // No descriptor to spare is a passing shortage (a retry may succeed), not a denial: a
      // tester's cron wrapper was told "permission denied" at ulimit -n 5.
      if (const int e = h ? sqlite3_system_errno(h) : 0; e == EMFILE || e == ENFILE) {
        return {make_error_code(errc::backend_unavailable), msg + " (" + std::strerror(e) + ")"};
      }
      [[fallthrough]];
    case SQLITE_READONLY:
    case SQLITE_PERM:
    case SQLITE_AUTH: {
      // A file opened read-write that the process may only read is opened read-only by
      // SQLite: the first write is refused here, mid-statement.
      const char* file = h ? sqlite3_db_filename(h, "main") : nullptr;
      if (file != nullptr && *file != '\0') {
        if (auto why = explain_access(file, true)) msg = std::string(what) + ": " + *why;
      }
      return {make_error_code(errc::permission_denied), msg};
    }
    case SQLITE_NOTADB:
    case SQLITE_CORRUPT:
      return {make_error_code(errc::protocol_error), msg};
    default:
      return {make_error_code(errc::backend_error), msg};
  }
}

namespace {

std::string user_name(uid_t uid) {
  if (const passwd* p = ::getpwuid(uid)) return p->pw_name;
  return std::to_string(uid);
}

std::string group_name(gid_t gid) {
  if (const group* g = ::getgrgid(gid)) return g->gr_name;
  return std::to_string(gid);
}

// "'p' is mode 0600, owned by root:root"
std::string describe(const std::string& p, const struct stat& st) {
  char mode[8];
  std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
  return "'" + p + "' is mode " + mode + ", owned by " + user_name(st.st_uid) + ":" +
         group_name(st.st_gid);
}

}  // namespace

// SQLite says only "unable to open database file" (or "attempt to write a readonly database")
// when the cause is a permission: name the file or directory refused, its mode and owner, and
// who asked, so the fix (a shared group, docs/sqlite.md) is evident.
std::optional<std::string> explain_access(const std::string& path, bool write) {
  namespace fs = std::filesystem;
  int want = R_OK | (write ? W_OK : 0);
  auto dir = fs::path(path).parent_path().string();
  if (dir.empty()) dir = ".";
  std::string who = "this process runs as " + user_name(::geteuid()) + " (uid " +
                    std::to_string(::geteuid()) + ")";
  struct stat st {};
  // No mode or owner helps on a file system mounted read-only (a tester, as root, was shown
  // a directory's mode 0755): name the mount's state instead.
  if (write && ::access(dir.c_str(), W_OK) != 0 && errno == EROFS)
    return "directory '" + dir + "' is on a read-only file system; dlock needs to create and " +
           "remove the -wal and -shm files there";
  if (::stat(dir.c_str(), &st) == 0 && ::access(dir.c_str(), X_OK | (write ? W_OK : 0)) != 0)
    return "permission denied: directory " + describe(dir, st) + "; " + who +
           (write ? " and needs to create and remove the -wal and -shm files there" : "");
  if (::stat(path.c_str(), &st) == 0 && ::access(path.c_str(), want) != 0)
    return "permission denied: " + describe(path, st) + "; " + who + " and needs " +
           (write ? "read and write" : "read") + " access";
  for (const char* suffix : {"-wal", "-shm"}) {
    auto side = path + suffix;
    if (::stat(side.c_str(), &st) == 0 && ::access(side.c_str(), want) != 0)
      return "permission denied: " + describe(side, st) + "; " + who;
  }
  return std::nullopt;
}

result<bool> stmt::step() {
  int rc = sqlite3_step(s_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  return fail(map_error(db_, rc, "sqlite statement"));
}

result<void> stmt::run() {
  for (;;) {
    auto r = step();
    if (!r) return fail(r.error());
    if (!*r) return {};
  }
}

result<db> db::open(const std::string& path, int busy_timeout_ms) {
  // SQLite opens a file this process may only read read-only, without a word, and the switch
  // to WAL that follows then makes -wal and -shm files beside it before the first write is
  // refused: a refused run left them behind. Refuse before anything is made.
  if (::access(path.c_str(), F_OK) == 0 && ::access(path.c_str(), W_OK) != 0) {
    auto why = explain_access(path, true);
    return fail(errc::permission_denied,
                "cannot open database '" + path +
                    "': " + why.value_or("permission denied: this process may not write it"));
  }
  sqlite3* h = nullptr;
  int rc = sqlite3_open_v2(
      path.c_str(), &h, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    auto f = map_error(h, rc, "cannot open database '" + path + "'");
    sqlite3_close_v2(h);
    // SQLite says only "unable to open database file"; the usual cause is a typo in the path.
    auto dir = std::filesystem::path(path).parent_path();
    std::error_code ec;
    if ((rc & 0xff) == SQLITE_CANTOPEN && !dir.empty() && !std::filesystem::exists(dir, ec) &&
        !ec) {
      f = {make_error_code(errc::invalid_argument),
           "cannot open database '" + path + "': directory '" + dir.string() +
               "' does not exist (dlock creates the file, not its directory)"};
    } else if (f.code == make_error_code(errc::permission_denied)) {
      if (auto why = explain_access(path, true))
        f = {f.code, "cannot open database '" + path + "': " + *why};
    }
    return fail(f);
  }
  sqlite3_extended_result_codes(h, 1);
  return db(h, path, busy_timeout_ms);  // which sets the busy handler
}

namespace {

// A file: URI for `path` (RFC 3986 escapes for what a URI would otherwise read).
std::string file_uri(const std::string& path) {
  static const char hex[] = "0123456789ABCDEF";
  std::string out = "file:";
  for (unsigned char c : path) {
    if (std::isalnum(c) || c == '/' || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

// The probe read waits out a writer's lock (`busy_timeout_ms`), as every later read does;
// `rc` is its result code.
result<sqlite3*> open_uri(const std::string& uri, const std::string& path, int busy_timeout_ms,
                          int& rc) {
  sqlite3* h = nullptr;
  rc = sqlite3_open_v2(uri.c_str(), &h,
                       SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc == SQLITE_OK) {
    sqlite3_busy_timeout(h, busy_timeout_ms);
    sqlite3_extended_result_codes(h, 1);
    rc = sqlite3_exec(h, "SELECT count(*) FROM sqlite_master", nullptr, nullptr, nullptr);
  }
  if (rc != SQLITE_OK) {
    auto f = map_error(h, rc, "cannot read database '" + path + "'");
    sqlite3_close_v2(h);
    if (f.code == make_error_code(errc::permission_denied)) {
      if (auto why = explain_access(path, false))
        f = {f.code, "cannot read database '" + path + "': " + *why};
    }
    return fail(f);
  }
  return h;
}

}  // namespace

result<db> db::open_read_only(const std::string& path, int busy_timeout_ms,
                              std::chrono::steady_clock::time_point open_until) {
  auto until_open =
      std::chrono::ceil<std::chrono::milliseconds>(open_until - std::chrono::steady_clock::now());
  const int probe_ms =
      static_cast<int>(std::clamp<long long>(until_open.count(), 1, std::max(busy_timeout_ms, 1)));
  int rc = SQLITE_OK;
  auto h = open_uri(file_uri(path) + "?mode=ro", path, probe_ms, rc);
  // A file read-only SQLite cannot open through its locks (no -shm can be made beside it: a
  // directory this user may not write) is read as immutable, a snapshot that never changes
  // again. Never for a writer's lock (busy: a file being created, or a long write): an
  // observer opened so would watch that snapshot forever.
  const int primary = rc & 0xff;
  bool snapshot = false;
  if (!h && primary != SQLITE_BUSY && primary != SQLITE_LOCKED &&
      !std::filesystem::exists(path + "-wal")) {
    h = open_uri(file_uri(path) + "?immutable=1", path, probe_ms, rc);
    snapshot = true;
  }
  if (!h) return fail(h.error());
  db out(*h, path, busy_timeout_ms);
  out.snapshot_ = snapshot;
  return out;
}

db::db(sqlite3* h, std::string path, int busy_timeout_ms)
    : h_(h),
      path_(std::move(path)),
      busy_(std::make_unique<busy_retry>(busy_retry{std::chrono::milliseconds{busy_timeout_ms}})) {
  sqlite3_busy_handler(h_, &db::on_busy, busy_.get());
  std::error_code ec;
  auto absolute = std::filesystem::absolute(path_, ec);
  reached_ = ec ? path_ : absolute.string();
  struct stat st {};
  if (::stat(file_name().c_str(), &st) == 0) opened_ = file_id{st.st_dev, st.st_ino};
  wal_path_ = file_name() + "-wal";
  given_is_resolved_ = opened_.has_value() && reached_ == file_name();
}

// Replaces sqlite3_busy_timeout's handler, whose naps start at 1 ms and grow to 100 ms: every
// write transaction here lasts tens of microseconds, so a writer that found the file busy
// waited many times longer than the one ahead of it took (a contended handoff's p99 was
// 1.4 ms of such naps). These start at 20 us and double up to 1 ms, until the timeout.
int db::on_busy(void* retry, int attempts) {
  auto& r = *static_cast<busy_retry*>(retry);
  auto now = std::chrono::steady_clock::now();
  if (attempts == 0) r.since = now;
  // Up to the request timeout, the open's budget while opening (until), or the deadline of
  // the caller the statement serves.
  auto left = std::min(r.timeout - (now - r.since), within_caller_deadline(now + r.timeout) - now);
  if (r.until) left = std::min(left, std::chrono::steady_clock::duration{*r.until - now});
  if (left <= std::chrono::steady_clock::duration::zero()) return 0;
  std::chrono::steady_clock::duration nap =
      std::chrono::microseconds{std::min(1000L, 20L << std::min(attempts, 6))};
  std::this_thread::sleep_for(std::min(nap, left));
  return 1;
}

db::~db() {
  for (auto& [sql, s] : cache_) sqlite3_finalize(s);
  if (h_) sqlite3_close_v2(h_);
}

result<stmt> db::prepare(const char* sql) {
  if (auto it = cache_.find(sql); it != cache_.end()) return stmt(h_, it->second, false);
  sqlite3_stmt* s = nullptr;
  int rc = sqlite3_prepare_v3(h_, sql, -1, SQLITE_PREPARE_PERSISTENT, &s, nullptr);
  if (rc != SQLITE_OK) return fail(map_error(h_, rc, "database '" + path_ + "'"));
  try {
    cache_.emplace(sql, s);
  } catch (...) {
    // Out of memory: a statement never finalized keeps its connection a zombie at close, and
    // its page cache with it (LeakSanitizer's find after a starved renewal, renewal_oom).
    sqlite3_finalize(s);
    throw;
  }
  return stmt(h_, s, false);
}

std::string db::file_name() const {
  const char* f = sqlite3_db_filename(h_, "main");
  return f && *f ? std::string(f) : path_;
}

bool db::moved() const {
  int moved = 0;
  // SQLITE_NOTFOUND from a VFS that cannot tell: then it has not moved as far as we know. Where
  // the path as given is the name SQLite resolved (no symlink on it), the stat() below asks the
  // same of the same name: one system call per request fewer.
  if (!given_is_resolved_ &&
      sqlite3_file_control(h_, "main", SQLITE_FCNTL_HAS_MOVED, &moved) == SQLITE_OK && moved != 0) {
    return true;
  }
  if (!opened_) return false;
  struct stat st {};
  if (::stat(reached_.c_str(), &st) != 0) return errno == ENOENT || errno == ENOTDIR;
  return st.st_dev != opened_->dev || st.st_ino != opened_->ino;
}

bool db::wal_replaced() const {
  if (snapshot_ || !h_) return false;
  struct stat st {};
  const bool there = ::stat(wal_path_.c_str(), &st) == 0;
  if (!wal_) {
    // In WAL mode the journal pointer is the log, open from this connection's first read on.
    sqlite3_file* log = nullptr;
    if (there &&
        sqlite3_file_control(h_, "main", SQLITE_FCNTL_JOURNAL_POINTER, &log) == SQLITE_OK && log &&
        log->pMethods) {
      wal_ = file_id{st.st_dev, st.st_ino};
    }
    return false;
  }
  if (!there) return errno == ENOENT || errno == ENOTDIR;
  return st.st_dev != wal_->dev || st.st_ino != wal_->ino;
}

result<void> db::exec(const char* sql) {
  int rc = sqlite3_exec(h_, sql, nullptr, nullptr, nullptr);
  if (rc != SQLITE_OK) return fail(map_error(h_, rc, "database '" + path_ + "'"));
  return {};
}

}  // namespace dlock::detail::sqlite
