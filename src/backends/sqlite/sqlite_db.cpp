#include "backends/sqlite/sqlite_db.hpp"

#include <cctype>
#include <filesystem>

namespace dlock::detail::sqlite {

failure map_error(sqlite3* h, int rc, std::string_view what) {
  std::string msg = std::string(what) + ": " + (h ? sqlite3_errmsg(h) : sqlite3_errstr(rc));
  switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return {make_error_code(errc::backend_unavailable), msg};
    case SQLITE_CANTOPEN:
    case SQLITE_READONLY:
    case SQLITE_PERM:
    case SQLITE_AUTH:
      return {make_error_code(errc::permission_denied), msg};
    case SQLITE_NOTADB:
    case SQLITE_CORRUPT:
      return {make_error_code(errc::protocol_error), msg};
    default:
      return {make_error_code(errc::backend_error), msg};
  }
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
    }
    return fail(f);
  }
  sqlite3_busy_timeout(h, busy_timeout_ms);
  sqlite3_extended_result_codes(h, 1);
  return db(h, path);
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

result<sqlite3*> open_uri(const std::string& uri, const std::string& path) {
  sqlite3* h = nullptr;
  int rc = sqlite3_open_v2(uri.c_str(), &h,
                           SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc == SQLITE_OK) {
    rc = sqlite3_exec(h, "SELECT count(*) FROM sqlite_master", nullptr, nullptr, nullptr);
  }
  if (rc != SQLITE_OK) {
    auto f = map_error(h, rc, "cannot read database '" + path + "'");
    sqlite3_close_v2(h);
    return fail(f);
  }
  return h;
}

}  // namespace

result<db> db::open_read_only(const std::string& path, int busy_timeout_ms) {
  auto h = open_uri(file_uri(path) + "?mode=ro", path);
  if (!h && !std::filesystem::exists(path + "-wal"))
    h = open_uri(file_uri(path) + "?immutable=1", path);
  if (!h) return fail(h.error());
  sqlite3_busy_timeout(*h, busy_timeout_ms);
  sqlite3_extended_result_codes(*h, 1);
  return db(*h, path);
}

db::~db() {
  for (auto& [sql, s] : cache_) sqlite3_finalize(s);
  sqlite3_close_v2(h_);
}

result<stmt> db::prepare(const char* sql) {
  if (auto it = cache_.find(sql); it != cache_.end()) return stmt(h_, it->second, false);
  sqlite3_stmt* s = nullptr;
  int rc = sqlite3_prepare_v3(h_, sql, -1, SQLITE_PREPARE_PERSISTENT, &s, nullptr);
  if (rc != SQLITE_OK) return fail(map_error(h_, rc, "database '" + path_ + "'"));
  cache_.emplace(sql, s);
  return stmt(h_, s, false);
}

result<void> db::exec(const char* sql) {
  int rc = sqlite3_exec(h_, sql, nullptr, nullptr, nullptr);
  if (rc != SQLITE_OK) return fail(map_error(h_, rc, "database '" + path_ + "'"));
  return {};
}

}  // namespace dlock::detail::sqlite
