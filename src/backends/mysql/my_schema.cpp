#include "backends/mysql/my_schema.hpp"

#include <mysqld_error.h>

#include <string_view>

#include "backends/mysql/my_sql_text.hpp"

namespace dlock::detail::my {
namespace {

const char* const ddl[] = {
    DLOCK_META_DDL,
    "CREATE TABLE IF NOT EXISTS dlock_sessions(id VARBINARY(64) PRIMARY KEY,"
    " owner VARBINARY(1024) NOT NULL, expires_ms BIGINT NOT NULL, conn BIGINT NULL)"
    " ENGINE=InnoDB",
    // Version 1 tables lack the connection id (a duplicate column is ignored below).
    "ALTER TABLE dlock_sessions ADD COLUMN conn BIGINT NULL",
    "CREATE TABLE IF NOT EXISTS dlock_fences(name VARBINARY(1024) PRIMARY KEY,"
    " fence BIGINT NOT NULL) ENGINE=InnoDB",
    // value and version: an election candidate's value (at most max_value_size bytes) and
    // how many times it was set.
    "CREATE TABLE IF NOT EXISTS dlock_entries(id VARBINARY(255) PRIMARY KEY,"
    " name VARBINARY(1024) NOT NULL, kind TINYINT NOT NULL, token BIGINT NOT NULL,"
    " session VARBINARY(64) NOT NULL, created_ms BIGINT NOT NULL,"
    " value VARBINARY(16384) NOT NULL DEFAULT '', version BIGINT NOT NULL DEFAULT 0,"
    " UNIQUE KEY name_token(name, token), KEY by_session(session)) ENGINE=InnoDB",
    // Version 2 tables lack them. With defaults, a version-2 client still running goes on
    // unchanged: its statements and the procedures' inserts name their columns.
    "ALTER TABLE dlock_entries ADD COLUMN value VARBINARY(16384) NOT NULL DEFAULT ''",
    "ALTER TABLE dlock_entries ADD COLUMN version BIGINT NOT NULL DEFAULT 0",
    // Version 5: 1 for an entry whose doorbell says whether it is queued (DLOCK_QUEUED).
    "ALTER TABLE dlock_entries ADD COLUMN bell TINYINT NOT NULL DEFAULT 0",
    // The procedures keep their parameters across versions, and their rows only gain
    // columns at the end: an older client still running calls them as before and reads the
    // columns it knows by position. (Replaced in one step on MariaDB: see for_server.)
    "DROP PROCEDURE IF EXISTS dlock_queue",
    // The live queue of one lock. Entries of lapsed sessions, and of sessions whose
    // connection is gone, are deleted on the way (with those sessions); the caller's own
    // session (p_session) is alive, so an uncontended call checks no connection.
    // Conditions are read with SELECT ... INTO, a plain read: InnoDB reads the SELECT of an
    // IF EXISTS in a routine with shared locks on every row it scans (repeatable read), and
    // those deadlocked with the enqueues' writes (150 deadlocks a second among four sessions,
    // each a statement retried after a pause).
    "CREATE PROCEDURE dlock_queue(IN p_name VARBINARY(1024), IN p_session VARBINARY(64))\n"
    "BEGIN\n"
    "  DECLARE t BIGINT DEFAULT " DLOCK_NOW
    ";\n"
    "  DECLARE dead INT DEFAULT 0;\n"
    "  SELECT EXISTS (SELECT 1 FROM dlock_entries e LEFT JOIN dlock_sessions s ON s.id = e.session\n"
    "                 WHERE e.name = p_name AND e.session <> p_session\n"
    "                   AND (s.id IS NULL OR s.expires_ms <= t OR NOT " DLOCK_CONNECTED("s") "))\n"
    "    INTO dead;\n"
    "  IF dead THEN\n"
    "    DELETE FROM dlock_sessions WHERE id IN (SELECT e.session FROM dlock_entries e\n"
    "        WHERE e.name = p_name AND e.session <> p_session)\n"
    "      AND (expires_ms <= t OR NOT " DLOCK_CONNECTED("dlock_sessions") ");\n"
    "    DELETE e FROM dlock_entries e LEFT JOIN dlock_sessions s ON s.id = e.session\n"
    "    WHERE e.name = p_name AND (s.id IS NULL OR s.expires_ms <= t);\n"
    "  END IF;\n"
    "  SELECT e.id, e.kind, e.token, e.created_ms, s.owner, s.expires_ms - t, e.value,\n"
    "         e.version\n"
    "  FROM dlock_entries e JOIN dlock_sessions s ON s.id = e.session\n"
    "  WHERE e.name = p_name AND s.expires_ms > t AND " DLOCK_QUEUED("e") "\n"
    "  ORDER BY e.token;\n"
    "END",
    "DROP PROCEDURE IF EXISTS dlock_enqueue",
    // Idempotent on the entry id. The fence row stays locked until COMMIT, so tokens commit
    // in order and queue order is token order.
    "CREATE PROCEDURE dlock_enqueue(IN p_session VARBINARY(64), IN p_name VARBINARY(1024),\n"
    "                               IN p_id VARBINARY(255), IN p_kind TINYINT)\n"
    "BEGIN\n"
    "  DECLARE t BIGINT;\n"
    "  DECLARE EXIT HANDLER FOR SQLEXCEPTION BEGIN ROLLBACK; RESIGNAL; END;\n"
    "  IF NOT EXISTS (SELECT 1 FROM dlock_sessions\n"
    "                 WHERE id = p_session AND expires_ms > " DLOCK_NOW
    "                   AND conn = CONNECTION_ID()) THEN\n"
    "    SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'dlock session expired';\n"
    "  END IF;\n"
    "  IF NOT EXISTS (SELECT 1 FROM dlock_entries WHERE id = p_id) THEN\n"
    "    START TRANSACTION;\n"
    "    INSERT INTO dlock_fences(name, fence) VALUES (p_name, 1)\n"
    "      ON DUPLICATE KEY UPDATE fence = fence + 1;\n"
    "    SELECT fence INTO t FROM dlock_fences WHERE name = p_name;\n"
    "    INSERT INTO dlock_entries(id, name, kind, token, session, created_ms)\n"
    "      VALUES (p_id, p_name, p_kind, t, p_session, " DLOCK_NOW
    ");\n"
    "    COMMIT;\n"
    "  END IF;\n"
    "  CALL dlock_queue(p_name, p_session);\n"
    "END",
    // Version 4: each entry's doorbell (my_bell.hpp), held by the owner's connection from the
    // enqueue until the removal. Procedures of their own: a version-3 client still running
    // calls dlock_enqueue and removes with a DELETE, and so takes no doorbell it would never
    // release (its waiters' GET_LOCK would then wait out a lease instead of the removal).
    "DROP PROCEDURE IF EXISTS dlock_enqueue_bell",
    // IS_USED_LOCK first: GET_LOCK is re-entrant, and a retried enqueue on the same connection
    // must not take the doorbell twice (one RELEASE_LOCK would then leave it held). Since
    // version 5 the doorbell must be got (an entry without it would not count as queued), the
    // entry is marked as ringing, and the session's released entries are deleted in the same
    // commit. READ COMMITTED: that delete locks only the rows it deletes, no gaps another
    // session's insert would wait for. The fence row is updated first, an X lock at once:
    // concurrent INSERT ... ON DUPLICATE KEY UPDATEs of one row each take a shared lock on
    // finding the duplicate and then deadlock upgrading it (a fifth of the enqueues of four
    // contending sessions failed so, each retried after a pause).
    "CREATE PROCEDURE dlock_enqueue_bell(IN p_session VARBINARY(64), IN p_name VARBINARY(1024),\n"
    "                                    IN p_id VARBINARY(255), IN p_kind TINYINT)\n"
    "BEGIN\n"
    "  DECLARE b VARCHAR(64) DEFAULT " DLOCK_BELL("p_id") ";\n"
    "  DECLARE t BIGINT;\n"
    "  DECLARE live INT DEFAULT 0;\n"
    "  DECLARE rings INT DEFAULT 1;\n"
    "  DECLARE known INT DEFAULT 0;\n"
    "  DECLARE EXIT HANDLER FOR SQLEXCEPTION BEGIN ROLLBACK; RESIGNAL; END;\n"
    "  SELECT COUNT(*), IFNULL(MAX(conn IS NOT NULL), 1) INTO live, rings FROM dlock_sessions\n"
    "  WHERE id = p_session AND expires_ms > " DLOCK_NOW " AND " DLOCK_OWN_CONN ";\n"
    "  IF NOT live THEN\n"
    "    SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'dlock session expired';\n"
    "  END IF;\n"
    "  IF IFNULL(IS_USED_LOCK(b), 0) <> CONNECTION_ID() AND IFNULL(GET_LOCK(b, 0), 0) <> 1 THEN\n"
    "    SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'doorbell of the entry is held elsewhere';\n"
    "  END IF;\n"
    "  SELECT EXISTS (SELECT 1 FROM dlock_entries WHERE id = p_id) INTO known;\n"
    "  IF NOT known THEN\n"
    "    " DLOCK_READ_COMMITTED "\n"
    "    START TRANSACTION;\n"
    "    UPDATE dlock_fences SET fence = fence + 1 WHERE name = p_name;\n"
    "    IF ROW_COUNT() = 0 THEN\n"
    "      INSERT INTO dlock_fences(name, fence) VALUES (p_name, 1)\n"
    "        ON DUPLICATE KEY UPDATE fence = fence + 1;\n"
    "    END IF;\n"
    "    SELECT fence INTO t FROM dlock_fences WHERE name = p_name;\n"
    "    INSERT INTO dlock_entries(id, name, kind, token, session, created_ms, bell)\n"
    "      VALUES (p_id, p_name, p_kind, t, p_session, " DLOCK_NOW
    ", rings);\n"
    "    DELETE e FROM dlock_entries e FORCE INDEX (by_session)\n"
    "    WHERE e.session = p_session AND NOT " DLOCK_QUEUED("e") ";\n"
    "    COMMIT;\n"
    "  END IF;\n"
    "  CALL dlock_queue(p_name, p_session);\n"
    "END",
    "DROP PROCEDURE IF EXISTS dlock_remove",
    // An entry that rings leaves when its doorbell is let go: nothing is written, so a release
    // waits for no flush (a server crash ends every session anyway: their connections go). The
    // row goes with the session's next enqueue or renewal. An older entry's row is deleted,
    // and committed, before the doorbell goes, as in version 4. The doorbell is released even
    // when the entry was not live (the lease had ended): the owner's connection holds nothing
    // for an entry it gave up.
    "CREATE PROCEDURE dlock_remove(IN p_name VARBINARY(1024), IN p_id VARBINARY(255),\n"
    "                              IN p_session VARBINARY(64))\n"
    "BEGIN\n"
    "  DECLARE n BIGINT;\n"
    "  DECLARE b BIGINT;\n"
    "  SELECT COUNT(*), IFNULL(MAX(e.bell), 0) INTO n, b\n"
    "  FROM dlock_entries e JOIN dlock_sessions s ON s.id = e.session\n"
    "  WHERE e.name = p_name AND e.id = p_id AND e.session = p_session\n"
    "    AND s.expires_ms > " DLOCK_NOW " AND " DLOCK_QUEUED("e") ";\n"
    "  IF b = 0 THEN\n"
    "    DELETE e FROM dlock_entries e JOIN dlock_sessions s ON s.id = e.session\n"
    "    WHERE e.name = p_name AND e.id = p_id AND e.session = p_session\n"
    "      AND s.expires_ms > " DLOCK_NOW ";\n"
    "    SET n = ROW_COUNT();\n"
    "  END IF;\n"
    "  DO RELEASE_LOCK(" DLOCK_BELL("p_id") ");\n"
    "  SELECT n;\n"
    "END",
    "DROP PROCEDURE IF EXISTS dlock_renew",
    // Older versions' renewal, and the session's released entries deleted in the same commit
    // (statements::keep_alive and drop_released now, one statement each).
    "CREATE PROCEDURE dlock_renew(IN p_ttl BIGINT, IN p_session VARBINARY(64))\n"
    "BEGIN\n"
    "  DECLARE n BIGINT;\n"
    "  DECLARE EXIT HANDLER FOR SQLEXCEPTION BEGIN ROLLBACK; RESIGNAL; END;\n"
    "  " DLOCK_READ_COMMITTED "\n"
    "  START TRANSACTION;\n"
    "  UPDATE dlock_sessions SET expires_ms = " DLOCK_NOW
    " + p_ttl\n"
    "  WHERE id = p_session AND expires_ms > " DLOCK_NOW
    "    AND conn = CONNECTION_ID() AND " DLOCK_CONNECTED("dlock_sessions") ";\n"
    "  SET n = ROW_COUNT();\n"
    "  IF n > 0 THEN\n"
    "    DELETE e FROM dlock_entries e FORCE INDEX (by_session)\n"
    "    WHERE e.session = p_session AND NOT " DLOCK_QUEUED("e") ";\n"
    "  END IF;\n"
    "  COMMIT;\n"
    "  SELECT n;\n"
    "END",
    "INSERT INTO dlock_meta(k, v) VALUES ('schema_version', '5') ON DUPLICATE KEY UPDATE v = '5'",
    // The routines' revision within version 5: older version-5 clients read only the version,
    // and the routines keep their parameters and, for those clients' sessions, their effect.
    "INSERT INTO dlock_meta(k, v) VALUES ('routines', '2') ON DUPLICATE KEY UPDATE v = '2'",
};

// A procedure replaced by DROP and CREATE is missing in between, and an older client calling
// it then fails (error 1305, final for it). MariaDB replaces one in a single statement that
// such a call waits for; MySQL has no such statement, so there the window stays (one round
// trip per procedure, once per upgrade).
std::string for_server(std::string_view sql, bool mariadb) {
  if (!mariadb) return std::string(sql);
  if (sql.starts_with("DROP PROCEDURE")) return {};
  constexpr std::string_view create = "CREATE PROCEDURE";
  if (sql.starts_with(create)) {
    return "CREATE OR REPLACE PROCEDURE" + std::string(sql.substr(create.size()));
  }
  return std::string(sql);
}

// The stored version and routines revision, 0 each if there is none yet.
struct stored_marks {
  long long version{0};
  long long routines{0};
};
result<stored_marks> stored(conn& c) {
  auto r = c.exec("SELECT k, v FROM dlock_meta WHERE k IN ('schema_version', 'routines')");
  if (!r) {
    if (r.error().message.find("(error " + std::to_string(ER_NO_SUCH_TABLE)) != std::string::npos)
      return stored_marks{};
    return fail(r.error());
  }
  stored_marks m;
  for (std::size_t i = 0; i < r->rows.size(); ++i) {
    (r->text(i, 0) == "routines" ? m.routines : m.version) = r->i64(i, 1);
  }
  return m;
}

}  // namespace

result<void> ensure_schema(conn& c) {
  auto check = [&]() -> result<bool> {
    auto v = stored(c);
    if (!v) return fail(v.error());
    if (v->version > schema_version) {
      return fail(errc::backend_error, c.where() + ": dlock schema version " +
                                           std::to_string(v->version) +
                                           " is newer than this dlock understands (" +
                                           std::to_string(schema_version) + ")");
    }
    return v->version == schema_version && v->routines >= routines_revision;
  };
  auto done = check();
  if (!done || *done) return done ? result<void>{} : fail(done.error());
  auto locked = c.exec("SELECT GET_LOCK('dlock_schema', 30), VERSION()");
  if (!locked) return fail(locked.error());
  if (locked->rows.empty() || locked->i64(0, 0) != 1) {
    return fail(errc::backend_unavailable, c.where() + ": another client is creating the schema");
  }
  result<void> out;
  if (done = check(); !done) {
    out = fail(done.error());
  } else if (!*done) {
    const bool mariadb = locked->text(0, 1).find("MariaDB") != std::string::npos;
    for (const char* text : ddl) {
      auto sql = for_server(text, mariadb);
      if (sql.empty()) continue;
      auto r = c.exec(sql);
      if (!r && r.error().message.find("(error " + std::to_string(ER_DUP_FIELDNAME)) !=
                    std::string::npos) {
        continue;  // the column is there already
      }
      if (!r) {
        out = fail(failure{r.error().code, r.error().message + " (creating dlock's tables)"});
        break;
      }
    }
  }
  if (c.usable()) (void)c.exec("SELECT RELEASE_LOCK('dlock_schema')");
  return out;
}

std::string bounded(const std::string& sql, std::chrono::milliseconds budget) {
  auto ms = budget.count();
  auto frac = std::to_string(1000 + ms % 1000).substr(1);
  return "SET STATEMENT max_statement_time = " + std::to_string(ms / 1000) + "." + frac + " FOR " +
         sql;
}

}  // namespace dlock::detail::my
