#pragma once
// dlock's tables and procedures in the MySQL/MariaDB database of the URL, and the statements
// the backend runs. The design is SQLite's (sqlite_backend.cpp) and PostgreSQL's
// (pg_schema.hpp): dlock_sessions (one lease row per session, with its connection's id),
// dlock_fences (per-lock
// fencing counter), dlock_entries (the queue, ordered by token; since version 3 each entry
// carries a value and its version, for elections). Expiries are UTC
// milliseconds computed by the server's clock (NOW(6)) in the same statement. Names and ids
// are VARBINARY: stored and compared byte for byte, whatever the server's collation.
//
// The connection is the session: it holds the named lock session_lock_name(session)
// (GET_LOCK, released by the server when the connection ends, visible to every user through
// IS_USED_LOCK without the PROCESS privilege, and never mistaken for a later connection that
// reuses the id), only that connection may renew the lease, and the entries of a session
// whose connection no longer holds that lock are dead to everyone.

#include <chrono>
#include <string>
#include <string_view>

#include "backends/mysql/my_conn.hpp"

namespace dlock::detail::my {

inline constexpr int schema_version = 5;
// The routines' revision within the version (dlock_meta 'routines'), raised when a routine
// changes in a way older clients of the same version still work with: 2 adds lease-only
// sessions (my_route.hpp).
inline constexpr int routines_revision = 2;

std::string session_lock_name(const std::string& session);

// Statement texts; parameters in the order documented.
struct statements {
  static const std::string create_meta;     // () the table of the schema version and mode
  static const std::string purge_sessions;  // ()
  static const std::string take_session;    // (lock name) -> 1 if this connection holds it
  static const std::string open_session;    // (session, owner, ttl_ms)
  // (session, owner, ttl_ms): a session whose route goes through a hop (my_route.hpp), freed
  // by its lease only.
  static const std::string open_lease_only_session;
  static const std::string enqueue;     // (session, name, entry id, kind) -> queue rows
  static const std::string list;        // (name, session) -> queue rows
  static const std::string remove;      // (name, entry id, session, entry id) -> 1 if it was live
  static const std::string remove_row;  // (name, entry id, session) -> 1: a lease-only session's
  // (entry id, timeout seconds, entry id) -> GET_LOCK's answer for the entry's doorbell
  // (1 got, 0 timed out, NULL failed) and RELEASE_LOCK's (my_bell.hpp).
  static const std::string ring;
  // (awaited entry id, own session, lock, awaited token) -> its fate after its doorbell was
  // got: it rang, our session lives, none is ahead of it (1 or 0 each).
  static const std::string fate;
  static const std::string keep_alive;     // (ttl_ms, session) -> affected: 0 or 1 renewed
  static const std::string drop_released;  // (session): its released entries' rows
  static const std::string close_entries;  // (session)
  static const std::string close_session;  // (session)
  static const std::string own_entries;    // (session) -> ids of its rows, released ones too
  static const std::string lock_names;     // (prefix length, prefix) -> names
  static const std::string alive;          // (entry id) -> lease_ms, if alive and connected
  // (n entry ids) -> those of them that are alive and connected, in one round trip (the
  // poll that serves a session's semaphore waiters: my_window_poll.hpp).
  static std::string alive_ids(std::size_t n);
  // (value, name, entry id, session) -> affected 0 or 1; the new version as the insert id.
  static const std::string set_value;
  // (name) -> how many entries are alive and connected, their largest token and the sum of
  // their versions: what an election observer polls (see mysql_backend.cpp's wait_change).
  static const std::string change_mark;
};

// `sql`, one statement, ended by MariaDB after `budget` (max_statement_time), even while it
// waits for a lock on a table: an error for the caller, the connection kept.
std::string bounded(const std::string& sql, std::chrono::milliseconds budget);
// Queue rows: id, kind, token, created_ms, owner, lease_ms, value, version -- live entries in
// token order.

// Creates tables and procedures on first use, or upgrades older ones in place; concurrent
// first uses are serialized by GET_LOCK. backend_error if the stored schema is newer than
// this dlock understands.
result<void> ensure_schema(conn& c);

// Records `mode` ("lease" or "advisory") as the database's, or refuses (invalid_argument)
// where it holds the other mode's locks: lease mode's rows and advisory mode's named locks
// never meet, so a holder in each mode of one name would both be granted. The first session
// to open on the database decides. Without `record` (an observer) it only reads the record.
result<void> claim_mode(conn& c, std::string_view mode, bool record);

}  // namespace dlock::detail::my
