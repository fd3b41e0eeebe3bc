#pragma once
// dlock's tables in a SQLite file (version 5; older files are upgraded in place at open):
//   dlock_meta(key PK, value)             -- 'schema_version'
//   dlock_sessions(id PK, owner, host, pid, pid_start, boot_id, expires_boot_ms)
//                                         -- one lease per session
//   dlock_fences(name PK, fence)          -- per-lock fencing counter, never reset
//   dlock_entries(name, id, kind, token, session, created_ms, value, version,
//                 PK(name, token))      -- without a rowid, one b-tree (5)
//                                         -- the queue; one row per holder or waiter; value
//                                            and version (3): an election candidate's value

#include <cstdint>
#include <string>

#include "backends/sqlite/sqlite_db.hpp"
#include "core/result.hpp"

namespace dlock::detail::sqlite {

inline constexpr int schema_version = 5;

// Creates the tables in a new file, or upgrades an older one in place. Call it inside the
// opening write transaction, so that concurrent openers upgrade once. A version-1 lease is
// carried over onto this boot's clock: `boot` is this boot's id, `boot_now_ms` and
// `wall_now_ms` the boot clock (CLOCK_BOOTTIME) and the wall clock now, in milliseconds.
// Fails with errc::unsupported for a version this code does not know.
// Refuses (unsupported) a file that holds another application's tables and none of dlock's:
// dlock would add its tables to it and switch it to WAL mode for good (the new-user trial:
// `--url sqlite://app.db` silently did both). Runs before anything is written.
result<void> refuse_foreign_file(db& d);

result<void> prepare_schema(db& d, const std::string& boot, std::int64_t boot_now_ms,
                            std::int64_t wall_now_ms);

}  // namespace dlock::detail::sqlite
