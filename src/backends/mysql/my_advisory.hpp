#pragma once
// mysql://...?mode=advisory: locks are MariaDB named locks (GET_LOCK(name, 0) /
// RELEASE_LOCK) on one connection per dlock session. GET_LOCK names are at most 64
// characters, so a lock is keyed by the server's SHA2 of "<db>:<lock name>" (144 bits of it);
// the fencing token comes from a sequence (dlock_adv_tokens, NEXTVAL) bumped in the same
// statement, only once the lock is granted, and release is one RELEASE_LOCK -- one round trip
// each, no table rows.
//
// What it costs against the default mode (and why it is not the default):
//  - MariaDB only (sequences arrived in 10.3); MySQL proper has no sequences, and the mode is
//    refused there (errc::unsupported).
//  - No shared locks: GET_LOCK is exclusive only, so a shared_mutex in this mode is refused
//    (errc::unsupported) rather than emulated.
//  - The server keeps no queue and MySQL has no NOTIFY: waiters poll IS_FREE_LOCK, backing
//    off with jitter up to a cap, and retry GET_LOCK, so waiters are not served in arrival
//    order and a release is seen up to one poll late.
//  - Named locks belong to the server connection: behind a pooling proxy (ProxySQL, MaxScale
//    read/write split) they land on whichever connection ran the statement, and they are not
//    replicated, so a failover to a replica forgets every lock.
//  - A lock lives as long as its connection. The connection's wait_timeout is the TTL (in
//    whole seconds, at least 1): the server ends a connection idle that long, which is the
//    lease; renewals are pings. A lost connection is lost locks, signalled at once.
//  - Two names whose hashes collide are one lock (safe, just less concurrent).
//  - Tokens: the sequence reserves a cached range with one InnoDB write, so a restart or a
//    crash skips the rest of that range and never hands a token out twice (with
//    innodb_flush_log_at_trx_commit=1).
// Within one session (one connection) GET_LOCK is re-entrant, so the session keeps a local
// queue per lock and lets only the entry at its head ask the server
// (backends/common/advisory_session.hpp, shared with PostgreSQL's mode=advisory). The
// connection also holds "dlock_session:<session id>" (IS_USED_LOCK names the connection, for
// administrators and the tests) and, while one of its entries waits,
// "dlockw:<hash>:<connection id>" so status tools can count waiters.

#include <memory>
#include <string>

#include "backends/mysql/my_conn.hpp"
#include "core/backend.hpp"

namespace dlock::detail::my {

// `t` carries the session's connection settings (its lease as wait_timeout).
result<std::unique_ptr<backend_session>> open_advisory(target t, const session_info& info);

}  // namespace dlock::detail::my
