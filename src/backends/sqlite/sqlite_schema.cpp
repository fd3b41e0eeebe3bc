#include "backends/sqlite/sqlite_schema.hpp"

namespace dlock::detail::sqlite {
namespace {

constexpr const char* schema = R"sql(
CREATE TABLE IF NOT EXISTS dlock_sessions(
  id TEXT PRIMARY KEY, owner TEXT NOT NULL, host TEXT NOT NULL, pid INTEGER NOT NULL,
  pid_start INTEGER NOT NULL, boot_id TEXT NOT NULL, expires_boot_ms INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS dlock_fences(name TEXT PRIMARY KEY, fence INTEGER NOT NULL)
  WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS dlock_entries(
  name TEXT NOT NULL, id TEXT NOT NULL, kind INTEGER NOT NULL, token INTEGER NOT NULL,
  session TEXT NOT NULL, created_ms INTEGER NOT NULL, value BLOB NOT NULL DEFAULT x'',
  version INTEGER NOT NULL DEFAULT 0, PRIMARY KEY(name, token)) WITHOUT ROWID;
INSERT INTO dlock_meta(key, value) VALUES ('schema_version', '5');
)sql";

// Version 1 -> 2: the sessions table is rebuilt without its wall-clock column, so a version-1
// client still using the file fails at its next renewal or open ("no such column") instead
// of writing leases on its wall clock next to ours. Live version-1 leases keep what is left
// of them (read on this process's wall clock, once).
constexpr const char* upgrade_1_rename = R"sql(
ALTER TABLE dlock_sessions RENAME TO dlock_sessions_v1;
CREATE TABLE dlock_sessions(
  id TEXT PRIMARY KEY, owner TEXT NOT NULL, host TEXT NOT NULL, pid INTEGER NOT NULL,
  pid_start INTEGER NOT NULL, boot_id TEXT NOT NULL, expires_boot_ms INTEGER NOT NULL);
)sql";
// ?1 boot id, ?2 boot clock now, ?3 wall clock now. A version-1 lease runs at most its TTL;
// the one-day cap only keeps a corrupt value finite.
constexpr const char* upgrade_1_copy = R"sql(
INSERT INTO dlock_sessions(id, owner, host, pid, pid_start, boot_id, expires_boot_ms)
SELECT id, owner, host, pid, pid_start, ?1, ?2 + MIN(expires_ms - ?3, 86400000)
FROM dlock_sessions_v1 WHERE expires_ms > ?3)sql";
constexpr const char* upgrade_1_finish = R"sql(
DROP TABLE dlock_sessions_v1;
DELETE FROM dlock_entries WHERE session NOT IN (SELECT id FROM dlock_sessions);
UPDATE dlock_meta SET value = '2' WHERE key = 'schema_version';
)sql";

// Version 2 -> 3: entries gain a value and its version (elections). Columns are added with
// defaults, so a version-2 process already using the file goes on working unchanged (it
// names its columns); a version-2 process opening the file anew refuses version 3.
constexpr const char* upgrade_2 = R"sql(
ALTER TABLE dlock_entries ADD COLUMN value BLOB NOT NULL DEFAULT x'';
ALTER TABLE dlock_entries ADD COLUMN version INTEGER NOT NULL DEFAULT 0;
UPDATE dlock_meta SET value = '3' WHERE key = 'schema_version';
)sql";

// Version 3 -> 4: the same columns in fewer b-trees, as every acquire and release writes a
// page of each: entries keyed by (session, id) without a rowid (no AUTOINCREMENT sequence, no
// separate id and session indexes; a session's entries are a key prefix), fences without a
// rowid. Fencing counters are copied, never reset. A version-3 process already using the
// file goes on working (it names its columns and never reads seq); one opening it anew
// refuses version 4.
constexpr const char* upgrade_3 = R"sql(
CREATE TABLE dlock_fences_v4(name TEXT PRIMARY KEY, fence INTEGER NOT NULL) WITHOUT ROWID;
INSERT INTO dlock_fences_v4(name, fence) SELECT name, fence FROM dlock_fences;
DROP TABLE dlock_fences;
ALTER TABLE dlock_fences_v4 RENAME TO dlock_fences;
CREATE TABLE dlock_entries_v4(
  name TEXT NOT NULL, id TEXT NOT NULL, kind INTEGER NOT NULL, token INTEGER NOT NULL,
  session TEXT NOT NULL, created_ms INTEGER NOT NULL, value BLOB NOT NULL DEFAULT x'',
  version INTEGER NOT NULL DEFAULT 0, PRIMARY KEY(session, id), UNIQUE(name, token))
  WITHOUT ROWID;
INSERT INTO dlock_entries_v4(name, id, kind, token, session, created_ms, value, version)
SELECT name, id, kind, token, session, created_ms, value, version FROM dlock_entries;
DROP TABLE dlock_entries;
ALTER TABLE dlock_entries_v4 RENAME TO dlock_entries;
UPDATE dlock_meta SET value = '4' WHERE key = 'schema_version';
)sql";

// Version 4 -> 5: the queue in one b-tree, keyed by (name, token), which every read of a queue
// and every check of an entry already names: version 4 kept a second b-tree, its (name, token)
// index, beside rows keyed by (session, id), and every acquire and release wrote a page of
// each. A release finds its row by a walk of the lock's queue in token order, which stops at
// once for a holder at the head; closing a session and reaping a dead one scan the table,
// which is rare. A version-4 process already using the file goes on working (its lookups by
// session and id scan); one opening it anew refuses version 5.
constexpr const char* upgrade_4 = R"sql(
CREATE TABLE dlock_entries_v5(
  name TEXT NOT NULL, id TEXT NOT NULL, kind INTEGER NOT NULL, token INTEGER NOT NULL,
  session TEXT NOT NULL, created_ms INTEGER NOT NULL, value BLOB NOT NULL DEFAULT x'',
  version INTEGER NOT NULL DEFAULT 0, PRIMARY KEY(name, token)) WITHOUT ROWID;
INSERT INTO dlock_entries_v5(name, id, kind, token, session, created_ms, value, version)
SELECT name, id, kind, token, session, created_ms, value, version FROM dlock_entries;
DROP TABLE dlock_entries;
ALTER TABLE dlock_entries_v5 RENAME TO dlock_entries;
UPDATE dlock_meta SET value = '5' WHERE key = 'schema_version';
)sql";

}  // namespace

result<void> refuse_foreign_file(db& d) {
  auto q = d.prepare(
      "SELECT (SELECT count(*) FROM sqlite_master WHERE name = 'dlock_meta'), "
      "(SELECT group_concat(name, ', ') FROM (SELECT name FROM sqlite_master "
      "WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' "
      "AND name NOT LIKE 'dlock\\_%' ESCAPE '\\' ORDER BY name LIMIT 5))");
  if (!q) return fail(q.error());
  auto row = q->step();
  if (!row) return fail(row.error());
  const bool ours = q->i64(0) > 0;
  const std::string others = q->text(1);
  if (auto done = q->run(); !done) return done;
  if (ours || others.empty()) return {};
  return fail(errc::unsupported,
              "'" + d.path() + "' is another application's database (tables: " + others +
                  "): dlock would add its tables and switch the file to WAL mode; give dlock a "
                  "file of its own");
}

result<void> prepare_schema(db& d, const std::string& boot, std::int64_t boot_now_ms,
                            std::int64_t wall_now_ms) {
  if (auto r = d.exec("CREATE TABLE IF NOT EXISTS dlock_meta(key TEXT PRIMARY KEY, "
                      "value TEXT NOT NULL)");
      !r) {
    return r;
  }
  auto v = d.prepare("SELECT value FROM dlock_meta WHERE key = 'schema_version'");
  if (!v) return fail(v.error());
  auto row = v->step();
  if (!row) return fail(row.error());
  if (!*row) return d.exec(schema);  // a new file
  auto text = v->text(0);
  if (auto done = v->run(); !done) return done;
  if (text == std::to_string(schema_version)) return {};
  if (text != "1" && text != "2" && text != "3" && text != "4") {
    return fail(errc::unsupported, "schema version '" + text + "' is not " +
                                       std::to_string(schema_version) +
                                       " (a newer dlock created this file?)");
  }
  if (text == "1") {
    if (auto r = d.exec(upgrade_1_rename); !r) return r;
    auto copy = d.prepare(upgrade_1_copy);
    if (!copy) return fail(copy.error());
    if (auto r = copy->bind(1, boot).bind(2, boot_now_ms).bind(3, wall_now_ms).run(); !r) return r;
    if (auto r = d.exec(upgrade_1_finish); !r) return r;
  }
  if (text == "1" || text == "2") {
    if (auto r = d.exec(upgrade_2); !r) return r;
  }
  if (text != "4") {
    if (auto r = d.exec(upgrade_3); !r) return r;
  }
  return d.exec(upgrade_4);
}

}  // namespace dlock::detail::sqlite
