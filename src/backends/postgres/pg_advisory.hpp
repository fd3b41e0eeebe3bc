#pragma once
// postgres://...?mode=advisory: locks are PostgreSQL session-level advisory locks
// (pg_try_advisory_lock / pg_try_advisory_lock_shared) on one connection per dlock session,
// keyed by the server's 64-bit hash of "schema:name"; the fencing token comes from a sequence
// bumped in the same statement, and release is pg_advisory_unlock plus a NOTIFY -- one round
// trip each, no table rows.
//
// What it costs against the default mode (and why it is not the default):
//  - The server keeps no queue: waiters retry pg_try_advisory_lock when a release NOTIFYs
//    them (or after a capped backoff, for a holder that vanished without one), so waiters
//    are not served in arrival order and a reader may overtake a waiting writer.
//  - Advisory locks belong to the server connection: behind a transaction-pooling proxy
//    (PgBouncer pool_mode=transaction) they land on whichever connection ran the statement,
//    and a pooler drops the lease's startup option, so a pooled connection is refused at open
//    (check_direct). They are not replicated: a failover to a replica forgets every lock.
//  - A lock lives as long as its connection. The server ends a connection idle for the TTL
//    (idle_session_timeout, PostgreSQL >= 14), which is the lease; renewals are pings.
//  - Two names whose 64-bit hashes collide are one lock (safe, just less concurrent).
//  - Tokens: nextval() commits without waiting for its WAL, so after a server crash the last
//    tokens may be handed out again (a clean restart keeps them).
// Within one session (one connection) advisory locks are re-entrant, so the session keeps a
// local queue per lock and lets only the entries at its head ask the server
// (backends/common/advisory_session.hpp, shared with MariaDB's mode=advisory).

#include <memory>
#include <string>

#include "backends/postgres/pg_conn.hpp"
#include "core/backend.hpp"

namespace dlock::detail::pg {

// `session` carries the session's connection options (its lease as idle_session_timeout);
// `listen` those of the listener connection, which must not time out while idle.
result<std::unique_ptr<backend_session>> open_advisory(target session, target listen,
                                                       std::string schema,
                                                       const session_info& info);

}  // namespace dlock::detail::pg
