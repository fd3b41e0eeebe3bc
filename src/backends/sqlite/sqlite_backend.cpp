// The SQLite backend; its tables are in sqlite_schema.hpp. An entry is alive while its
// session's lease runs and its process exists. A lease ends at expires_boot_ms on
// CLOCK_BOOTTIME of the boot named boot_id: every process of the host shares that clock and
// nothing steps it (an NTP step or `date -s` moves only the wall clock, which decided leases
// in version 1), and a lease of another boot is over. The wall clock only dates entries for
// display (created_ms). Writes use BEGIN IMMEDIATE so the write lock is taken up front (a
// deferred upgrade returns SQLITE_BUSY without waiting).
#include "backends/sqlite/sqlite_backend.hpp"

#include <filesystem>

#include "backends/sqlite/file_system.hpp"
#include "backends/sqlite/shared_file.hpp"
#include "backends/sqlite/sqlite_db.hpp"
#include "backends/sqlite/sqlite_session.hpp"
#include "core/open_budget.hpp"
#include "core/url.hpp"

namespace dlock::detail {

using sqlite::db;

result<std::unique_ptr<backend_session>> open_sqlite(const url& u, const session_info& info) {
  if (!u.hosts.empty() || u.path.empty() || u.path == "/") {
    return fail(errc::invalid_argument,
                "URL '" + u.redacted + "': want sqlite:///path/to/locks.db (an absolute path)");
  }
  // A file has no log-in (its mode decides who may lock): a user or password here was meant
  // for another URL, and ignoring it would hide that mix-up.
  if (u.has_user_info) {
    return fail(errc::invalid_argument,
                "URL '" + u.redacted +
                    "': a sqlite:// URL takes no user or password (before '@'); want "
                    "sqlite:///path/to/locks.db");
  }
  // SQLite says only "unable to open database file" (read as a permission problem) or, opened
  // read-only, "disk I/O error" (read as a backend fault). It is a wrong URL, as a missing
  // directory is (db::open), and the fix is a file name in it.
  if (std::error_code ec; std::filesystem::is_directory(u.path, ec)) {
    auto dir = u.path;
    while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
    return fail(errc::invalid_argument, "URL '" + u.redacted + "': '" + u.path +
                                            "' is a directory, not a database file (name a "
                                            "file in it, e.g. " +
                                            "sqlite://" + encode_path(dir + "/locks.db") + ")");
  }
  // A device, pipe or socket (sqlite:///dev/null): SQLite said "disk I/O error", exit 69, as
  // if the backend had failed (a tester's). Only a regular file, or none yet, can hold locks.
  if (std::error_code ec;
      std::filesystem::exists(u.path, ec) && !std::filesystem::is_regular_file(u.path, ec)) {
    return fail(errc::invalid_argument, "URL '" + u.redacted + "': '" + u.path +
                                            "' is not a regular file (a device, pipe or "
                                            "socket): name a database file");
  }
  if (auto r = sqlite::check_local_file_system(u.path); !r) return fail(r.error());
  // Before anything is made beside this name (session::start checks again, once it is open).
  if (auto r = sqlite::check_single_name(u.path); !r) return fail(r.error());
  auto busy_ms = static_cast<int>(info.request_timeout.count());
  // A file has no connect: what bounds an open is waiting out another connection's write
  // transaction. Every such wait of this attempt (the read-only probe, the switch to WAL, the
  // schema, the session row) ends within the attempt's bound together, so that `-w 500ms`
  // gives up after about 500 ms, not after each statement's request timeout.
  const auto open_until = steady::now() + connect_bound(info.request_timeout);
  if (!info.observe_only) sqlite::create_group_shared(u.path);
  auto d = info.observe_only ? db::open_read_only(u.path, busy_ms, open_until)
                             : db::open(u.path, busy_ms);
  if (!d) return fail(d.error());
  auto s = std::make_unique<sqlite::session>(std::move(*d), info);
  if (auto r = s->start(open_until); !r) {
    auto& m = r.error().message;
    if (m.find("'" + u.path + "'") != std::string::npos) return fail(r.error());
    return fail(failure{r.error().code, "sqlite database '" + u.path + "': " + m});
  }
  return s;
}

}  // namespace dlock::detail
