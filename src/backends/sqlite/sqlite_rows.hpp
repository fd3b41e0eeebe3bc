#pragma once
// One row of the queue query (sqlite_queue.cpp's queue_sql) and the entry it stands for.
// Pure apart from reading the statement's current row; whether the row's process is alive
// is the caller's question (it reads /proc).

#include <cstdint>
#include <string>

#include "backends/sqlite/local_process.hpp"
#include "backends/sqlite/sqlite_db.hpp"
#include "core/backend.hpp"

namespace dlock::detail::sqlite {

struct queue_row {
  std::string id;
  std::int64_t kind{0};
  std::int64_t token{0};
  std::int64_t created_ms{0};
  std::string session;
  std::string owner;
  process_id process;
  // When the lease ends on this boot's CLOCK_BOOTTIME (ms); 0 when the session row is gone or
  // was written during another boot.
  std::int64_t expires_ms{0};
  std::string value;  // schema version 3
  std::int64_t version{0};
};

// The current row of a stepped queue_sql statement.
queue_row read_queue_row(const stmt& s);

// Whether the row's session lease still runs at `now_ms` (its process aside).
inline bool lease_runs(const queue_row& r, std::int64_t now_ms) { return r.expires_ms > now_ms; }

// The entry of a row whose lease runs at `now_ms`.
entry row_entry(const queue_row& r, std::int64_t now_ms);

}  // namespace dlock::detail::sqlite
