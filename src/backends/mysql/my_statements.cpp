// The statements the lease-mode backend runs (my_schema.hpp: statements), composed from the
// SQL text the schema's routines share (my_sql_text.hpp).
#include <string>

#include "backends/mysql/my_schema.hpp"
#include "backends/mysql/my_sql_text.hpp"

namespace dlock::detail::my {

const std::string statements::create_meta = DLOCK_META_DDL;
const std::string statements::purge_sessions =
    "DELETE s, e FROM dlock_sessions s LEFT JOIN dlock_entries e ON e.session = s.id"
    " WHERE s.expires_ms <= " DLOCK_NOW;
std::string session_lock_name(const std::string& session) { return "dlock_session:" + session; }

const std::string statements::take_session = "SELECT GET_LOCK(?, 0)";
const std::string statements::open_session =
    "INSERT INTO dlock_sessions(id, owner, expires_ms, conn) VALUES (?, ?, " DLOCK_NOW
    " + ?, CONNECTION_ID())"
    " ON DUPLICATE KEY UPDATE id = id";
const std::string statements::open_lease_only_session =
    "INSERT INTO dlock_sessions(id, owner, expires_ms, conn) VALUES (?, ?, " DLOCK_NOW
    " + ?, NULL)"
    " ON DUPLICATE KEY UPDATE id = id";
const std::string statements::enqueue = "CALL dlock_enqueue_bell(?, ?, ?, ?)";
const std::string statements::list = "CALL dlock_queue(?, ?)";
// Only an entry of a live session: none removed means it was gone or its lease had ended
// (lock_lost); a dead session's entries go with the session's purge.
// This client's entries all ring (dlock_enqueue_bell since version 5), so its removal is the
// doorbell's release, without the procedure (one result set, no routine to run): whether the
// entry was ours and live, then RELEASE_LOCK, evaluated left to right. dlock_remove stays for
// version-4 clients, whose older entries may not ring.
const std::string statements::remove =
    "SELECT (SELECT COUNT(*) FROM dlock_entries e JOIN dlock_sessions s ON s.id = e.session"
    " WHERE e.name = ? AND e.id = ? AND e.session = ? AND s.expires_ms > " DLOCK_NOW
    "), RELEASE_LOCK(" DLOCK_BELL("?") ")";
// Both in one statement, evaluated left to right: the doorbell is let go as soon as it is got
// (RELEASE_LOCK of a doorbell this connection did not get is 0 and changes nothing).
// A lease-only session's entries leave with their rows (dlock_remove deletes the row, commits,
// then lets the doorbell go): the doorbell wakes its waiters, the row decides.
const std::string statements::remove_row = "CALL dlock_remove(?, ?, ?)";
const std::string statements::ring =
    "SELECT GET_LOCK(" DLOCK_BELL("?") ", ?), RELEASE_LOCK(" DLOCK_BELL("?") ")";
// The lease only on the session's own live connection.
// A renewal touches the sessions table only, so a lock on the entries table (a DBA's LOCK
// TABLES, an ALTER waiting for one) does not hold it up; dlock_renew, which older versions
// call, also deletes the released entries' rows, which drop_released does on its own now.
const std::string statements::keep_alive =
    "UPDATE dlock_sessions SET expires_ms = " DLOCK_NOW
    " + ? WHERE id = ? AND expires_ms > " DLOCK_NOW " AND " DLOCK_OWN_CONN
    " AND " DLOCK_CONNECTED("dlock_sessions");
const std::string statements::drop_released =
    "DELETE e FROM dlock_entries e FORCE INDEX (by_session)"
    " WHERE e.session = ? AND NOT " DLOCK_QUEUED("e");
// A session's rows by its index, whatever the optimizer estimates: a DELETE run as a scan
// locks every row it reads (InnoDB gives DELETE no semi-consistent read), and two such scans
// deadlocked (a session's goodbye and another's enqueue).
const std::string statements::close_entries =
    "DELETE e FROM dlock_entries e FORCE INDEX (by_session) WHERE e.session = ?";
const std::string statements::close_session = "DELETE FROM dlock_sessions WHERE id = ?";
const std::string statements::own_entries =
    "SELECT e.id FROM dlock_entries e FORCE INDEX (by_session) WHERE e.session = ?";
// As remove, and only on the session's own live connection (as keep_alive): a session
// whose connection ended must not speak any more. LAST_INSERT_ID(expr) hands the new
// version back in the reply to this statement, so no second statement can see another's.
const std::string statements::set_value =
    "UPDATE dlock_entries e JOIN dlock_sessions s ON s.id = e.session"
    " SET e.value = ?, e.version = LAST_INSERT_ID(e.version + 1)"
    " WHERE e.name = ? AND e.id = ? AND e.session = ? AND s.expires_ms > " DLOCK_NOW
    " AND (s.conn = CONNECTION_ID() OR s.conn IS NULL) AND " DLOCK_CONNECTED(
        "s") " AND " DLOCK_QUEUED("e");
const std::string statements::lock_names =
    "SELECT DISTINCT e.name FROM dlock_entries e JOIN dlock_sessions s ON s.id = e.session"
    " WHERE s.expires_ms > " DLOCK_NOW
    " AND " DLOCK_QUEUED("e") " AND SUBSTRING(e.name, 1, ?) = CAST(? AS BINARY) ORDER BY e.name";
const std::string statements::alive =
    "SELECT s.expires_ms - " DLOCK_NOW
    " FROM dlock_entries e JOIN dlock_sessions s ON s.id = e.session"
    " WHERE e.id = ? AND s.expires_ms > " DLOCK_NOW
    " AND " DLOCK_CONNECTED("s") " AND " DLOCK_QUEUED("e");

std::string statements::alive_ids(std::size_t n) {
  std::string marks;
  for (std::size_t i = 0; i < n; ++i) marks += i ? ",?" : "?";
  return "SELECT e.id FROM dlock_entries e JOIN dlock_sessions s ON s.id = e.session"
         " WHERE e.id IN (" +
         marks +
         ") AND s.expires_ms > " DLOCK_NOW " AND " DLOCK_CONNECTED("s") " AND " DLOCK_QUEUED("e");
}

// After a doorbell was got: (awaited entry id, own session, lock, awaited token) -> one row,
// 1 or 0 each: the entry rings (no row of it that takes no doorbell is left), our session
// lives, and no live entry is ahead of the awaited one. Entries ahead only ever leave, so the
// last is true from the first time it is.
const std::string statements::fate =
    "SELECT NOT EXISTS (SELECT 1 FROM dlock_entries WHERE id = ? AND bell = 0),"
    " EXISTS (SELECT 1 FROM dlock_sessions s WHERE s.id = ? AND s.expires_ms > " DLOCK_NOW
    " AND " DLOCK_CONNECTED("s") "),"
    " NOT EXISTS (SELECT 1 FROM dlock_entries e JOIN dlock_sessions s ON s.id = e.session"
    " WHERE e.name = ? AND e.token < ? AND s.expires_ms > " DLOCK_NOW " AND " DLOCK_CONNECTED("s")
    " AND " DLOCK_QUEUED("e") ")";

// The live entries as dlock_queue lists them. Tokens only grow and versions only count up,
// so an entry joining changes the largest token, one leaving (and none joining) the count,
// and a value set (the entries the same) the sum of versions: three integers stand for the
// ids and versions same_entries compares, without reading a value.
const std::string statements::change_mark =
    "SELECT COUNT(*), IFNULL(MAX(e.token), 0), IFNULL(SUM(e.version), 0)"
    " FROM dlock_entries e JOIN dlock_sessions s ON s.id = e.session"
    " WHERE e.name = ? AND s.expires_ms > " DLOCK_NOW
    " AND " DLOCK_CONNECTED("s") " AND " DLOCK_QUEUED("e");

}  // namespace dlock::detail::my
