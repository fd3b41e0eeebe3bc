#pragma once
// SQL text shared by the schema's routines (my_schema.cpp) and the client's statements
// (my_statements.cpp): string-literal macros, so that both compose them at compile time.
// Included by those two .cpp files only (the macros stay in their translation units).

// The server's clock as UTC milliseconds (the connection's time_zone is +00:00).
#define DLOCK_NOW "CAST(UNIX_TIMESTAMP(NOW(6)) * 1000 AS SIGNED)"
// Session row `s` still has its connection (rows of schema version 1 have none recorded).
#define DLOCK_CONNECTED(s)                \
  "(" s                                   \
  ".conn IS NULL OR IFNULL(IS_USED_LOCK(" \
  "CONCAT('dlock_session:', " s ".id)), 0) = " s ".conn)"

// The session row (of the table the statement reads) is this connection's: its own, or,
// since routines revision 2, a lease-only session's (its route goes through a hop: my_route.hpp),
// which names no connection and is renewed on the connection that opened it.
#define DLOCK_OWN_CONN "(conn = CONNECTION_ID() OR conn IS NULL)"
// The doorbell of entry id `e` (an SQL expression): a named lock apart from mode=advisory's
// ('dlock:' and 36 hex digits, 'dlockw:...') and the session's ('dlock_session:...'), 48
// characters (MySQL refuses names over 64), server-wide like every named lock, so the entry id
// (random per session) is what keeps two databases' doorbells apart.
#define DLOCK_BELL(e) "CONCAT('dlock:e:', LEFT(SHA2(" e ", 256), 40))"
// The next transaction reads committed rows, so that a DELETE locks only the rows it deletes;
// not where the binary log is written statement by statement, which refuses READ COMMITTED
// (error 1665) and keeps the default.
#define DLOCK_READ_COMMITTED                                \
  "IF @@log_bin = 0 OR @@binlog_format <> 'STATEMENT' THEN" \
  " SET TRANSACTION ISOLATION LEVEL READ COMMITTED; END IF;"
// Entry row `e` is still queued. Since version 5 an entry that rings (bell = 1) leaves when its
// owner lets its doorbell go: the release commits nothing, and the row is deleted later, in
// its session's next enqueue or renewal (a commit it pays anyway). Its owner's connection holds
// the doorbell from the enqueue until the release, and a session dies with that connection, so
// a free doorbell means released or dead. Entries of older clients (bell = 0) leave with
// their row, as before.
#define DLOCK_QUEUED(e) "(" e ".bell = 0 OR IS_USED_LOCK(" DLOCK_BELL(e ".id") ") IS NOT NULL)"

#define DLOCK_META_DDL                                                                        \
  "CREATE TABLE IF NOT EXISTS dlock_meta(k VARCHAR(64) PRIMARY KEY, v VARCHAR(255) NOT NULL)" \
  " ENGINE=InnoDB"
