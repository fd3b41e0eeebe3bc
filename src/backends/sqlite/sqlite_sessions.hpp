#pragma once
// The session rows of a SQLite lock file (dlock_sessions): a session's lease and the process
// that owns it. Leases are read on CLOCK_BOOTTIME of the boot named `boot` (see
// sqlite_backend.cpp); a session row of another boot is over. Callers hold the file's write
// transaction where a function writes.

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "backends/sqlite/local_process.hpp"
#include "backends/sqlite/sqlite_db.hpp"
#include "core/result.hpp"

namespace dlock::detail::sqlite {

// Inserts session `id` of `owner` (this process `me`), its lease ending at `expires_ms`.
result<void> insert_session(db& d, std::string_view id, std::string_view owner,
                            const process_id& me, std::string_view boot, std::int64_t expires_ms);

// Moves session `id`'s lease end to `expires_ms` if it still runs at `now_ms`; false when it
// had ended (or the row is gone).
result<bool> renew_session(db& d, std::string_view id, std::string_view boot, std::int64_t now_ms,
                           std::int64_t expires_ms);

// Whether session `id`'s lease runs at `now_ms`: session_expired (naming it) when not.
result<void> session_live(db& d, std::string_view id, std::string_view boot, std::int64_t now_ms);

// Whether session `id` is over at `now_ms`: its row gone, its lease ended, or `alive` false
// for its process. Read inside a write transaction, so a renewal cannot slip in between.
result<bool> session_over(db& d, std::string_view id, std::string_view boot, std::int64_t now_ms,
                          const std::function<bool(const process_id&)>& alive);

// Deletes session `id` and its entries, appending the removed entry ids to `removed`.
result<void> delete_session(db& d, std::string_view id, std::vector<std::string>& removed);

}  // namespace dlock::detail::sqlite
