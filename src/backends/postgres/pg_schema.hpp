#pragma once
// dlock's tables and functions in one PostgreSQL schema (default "dlock"), and the
// statements the backend runs against them. The design is SQLite's (sqlite_backend.cpp):
//   sessions(id, owner, expires, pid, started)  -- one lease row per session and its
//                                  connection's server process: the connection is the session
//   fences(name, fence)           -- per-lock bound on every token granted, never lowered
//   fence_hot(name, fence, bound)  -- unlogged: the block of tokens in use (a crash empties it)
//   entries(id, name, kind, token, session, created, value, version)  -- the queue, ordered
//                                  by token; value and version: an election candidate's
// with every expiry computed by the database's clock_timestamp() (now() would be the
// transaction's start), and server-side functions so that uncontended acquire and release
// are one round trip each.

#include <string>
#include <string_view>

#include "backends/postgres/pg_conn.hpp"

namespace dlock::detail::pg {

inline constexpr int schema_version = 3;

// Every statement the backend runs; parameters are $1.. in the order documented.
struct statements {
  statement open_session;         // (session, owner, ttl_ms); also purges lapsed sessions
  statement enqueue;              // (session, name, entry id, kind) -> queue rows
  statement list;                 // (name, session) -> queue rows
  statement set_value;            // (name, entry id, session, hex value) -> new version; no
                                  // row if the entry is gone or the lease lapsed
  statement remove;               // (name, entry id, session); the trigger notifies waiters
  statement open_pooled_session;  // (as open_session) for a session behind a transaction
                                  // pooler: no server process of its own, only the lease
  statement keep_alive;  // (session, ttl_ms) -> affected 0 or 1; only on its own connection
                         // (any, for a pooled session)
  statement close;       // (session)
  statement lock_names;  // (prefix) -> names
  statement alive;       // (entry id) -> lease_ms of the entry's session and whether its
                         // connection still exists; no row if the entry is gone or lapsed
  statement alive_any;   // (text[] of entry ids) -> per live entry: id, lease_ms, connection
                         // exists (as alive, for a semaphore's waiter watching N entries)
  statement listen;      // (entry id, reset) -> channel; LISTENs on it
  // ?mode=advisory (pg_advisory.hpp); the key is the server's 64-bit hash of "schema:name".
  statement adv_try_x;     // (schema:name) -> token, or NULL if another connection holds it
  statement adv_try_s;     // (schema:name) -> token, or NULL if another connection writes
  statement adv_unlock_x;  // (schema:name); NOTIFYs channel("advisory:" + schema:name) if
                           // a session is marked waiting
  statement adv_unlock_s;  // (schema:name); likewise
  statement adv_mark;      // (schema:name): "this session waits" (a shared lock on key 2)
  statement adv_unmark;    // (schema:name)
  statement ping;          // () -> 1
  // remove, keep_alive and close, committed without waiting for the WAL flush
  // (synchronous_commit off for their own transaction only). Only for a session bound to its
  // server process: a crash that loses such a commit also ends that process, and with it the
  // session, so the lost release or renewal was moot. Enqueue decides for itself, on the
  // server: it waits for the flush when it reserves a new block of tokens or the session is
  // pooled (see enqueue_values in pg_schema.cpp).
  statement remove_lazy;
  statement keep_alive_lazy;
  statement close_lazy;
  statement own_entries;  // (session) -> ids of the session's entries (by entries_session)
};
// Queue rows: id, kind, token, created_ms, owner, lease_ms, hex value, version -- live
// entries in token order.

// `schema` must already be a valid identifier (see valid_schema_name). pg_statements.cpp.
statements make_statements(const std::string& schema);

// Lower-case letters, digits and '_', not starting with a digit, at most 63 bytes, so it
// needs no quoting rules beyond double quotes.
bool valid_schema_name(const std::string& schema);

// `sql` with each "@S" replaced by the double-quoted schema name.
std::string with_schema(std::string sql, const std::string& schema);

// Creates the schema on first use, idempotently and safely against concurrent first uses
// (an advisory transaction lock serializes them). backend_error if the stored schema is
// newer than this dlock understands.
result<void> ensure_schema(conn& c, const std::string& schema);

// Records `mode` ("lease" or "advisory") as the schema's, or refuses (invalid_argument) where
// the schema holds the other mode's locks: the two modes keep their locks apart (rows and
// advisory locks), so a lease-mode holder and an advisory-mode holder of one name would both
// be granted. The first session to open on the schema decides. Without `record` (an observer)
// it only reads the record.
result<void> claim_mode(conn& c, const std::string& schema, std::string_view mode, bool record);

}  // namespace dlock::detail::pg
