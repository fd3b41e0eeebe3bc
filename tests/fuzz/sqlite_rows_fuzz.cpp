// libFuzzer target: what SQLite hands back for the queue query. The database file is shared
// by every process on the host, so any of them (or a damaged file) may have left any value
// of any type in any column. The bytes become rows of typed values (NULL, integer, real,
// text, blob) in an in-memory table, read back through the backend's own row reader and
// turned into entries; nothing may crash, whatever the values.
#include <sqlite3.h>

#include <cstdint>
#include <cstring>
#include <string>

#include "backends/sqlite/sqlite_rows.hpp"

namespace sq = dlock::detail::sqlite;

namespace {

struct bytes {
  const std::uint8_t* p;
  std::size_t n;
  bool take(void* out, std::size_t k) {
    if (n < k) return false;
    std::memcpy(out, p, k);
    p += k;
    n -= k;
    return true;
  }
};

// Binds one value chosen by the input to parameter i; false when the input is used up.
bool bind_value(sqlite3_stmt* s, int i, bytes& in) {
  std::uint8_t tag = 0;
  if (!in.take(&tag, 1)) return false;
  switch (tag % 5) {
    case 0:
      return sqlite3_bind_null(s, i) == SQLITE_OK;
    case 1: {
      std::int64_t v = 0;
      if (!in.take(&v, 8)) return false;
      return sqlite3_bind_int64(s, i, v) == SQLITE_OK;
    }
    case 2: {
      double v = 0;
      if (!in.take(&v, 8)) return false;
      return sqlite3_bind_double(s, i, v) == SQLITE_OK;
    }
    default: {
      std::uint8_t len = 0;
      if (!in.take(&len, 1)) return false;
      std::string v(len, '\0');
      if (!in.take(v.data(), len)) return false;
      return (tag % 5 == 3 ? sqlite3_bind_text(s, i, v.data(), len, SQLITE_TRANSIENT)
                           : sqlite3_bind_blob(s, i, v.data(), len, SQLITE_TRANSIENT)) == SQLITE_OK;
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  sqlite3* db = nullptr;
  if (sqlite3_open(":memory:", &db) != SQLITE_OK) return 0;
  sqlite3_exec(db, "CREATE TABLE q(c0, c1, c2, c3, c4, c5, c6, c7, c8, c9, c10, c11)", nullptr,
               nullptr, nullptr);
  sqlite3_stmt* ins = nullptr;
  sqlite3_prepare_v2(db, "INSERT INTO q VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
                     -1, &ins, nullptr);
  bytes in{data, size};
  for (int row = 0; row < 8 && ins; ++row) {
    bool full = true;
    for (int c = 1; c <= 12 && full; ++c) full = bind_value(ins, c, in);
    if (!full) break;
    sqlite3_step(ins);
    sqlite3_reset(ins);
  }
  sqlite3_finalize(ins);
  sqlite3_stmt* sel = nullptr;
  if (sqlite3_prepare_v2(db, "SELECT * FROM q ORDER BY rowid", -1, &sel, nullptr) == SQLITE_OK) {
    sq::stmt s(db, sel);
    const std::int64_t now = 1700000000000;
    while (s.step().value_or(false)) {
      auto r = sq::read_queue_row(s);
      if (sq::lease_runs(r, now)) (void)sq::row_entry(r, now);
    }
  }
  sqlite3_close(db);
  return 0;
}
