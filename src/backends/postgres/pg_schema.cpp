#include "backends/postgres/pg_schema.hpp"

namespace dlock::detail::pg {
namespace {

// Taken by every first use of any schema before it looks again and runs the DDL below.
constexpr const char* ddl_lock = "BEGIN; SELECT pg_advisory_xact_lock(7234315448311949163)";

// "@S" stands for the quoted schema name. Runs inside ddl_lock's transaction and ends it.
constexpr const char* ddl = R"sql(
CREATE SCHEMA IF NOT EXISTS @S;
CREATE TABLE IF NOT EXISTS @S.meta(key text PRIMARY KEY, value text NOT NULL);
CREATE TABLE IF NOT EXISTS @S.sessions(
  id text PRIMARY KEY, owner text NOT NULL, expires timestamptz NOT NULL);
CREATE TABLE IF NOT EXISTS @S.fences(name text PRIMARY KEY, fence bigint NOT NULL);
-- Key fence_blocks: fences.fence is a bound, raised 32 at a time in a commit that waits for
-- the WAL flush; every token granted so far is at or below it. fence_hot holds the block in
-- use (the last token granted from it, and the bound it was reserved under), so the other 31
-- acquires of a block need not wait for a flush. It is unlogged because PostgreSQL empties
-- unlogged tables whenever it starts after a crash, and a crash is the only way a commit
-- that did not wait can be lost: after one, the next acquire starts a new block above the
-- durable bound, so tokens still rise (with a gap). A promoted replica starts it empty too.
CREATE UNLOGGED TABLE IF NOT EXISTS @S.fence_hot(
  name text PRIMARY KEY, fence bigint NOT NULL, bound bigint NOT NULL);
CREATE TABLE IF NOT EXISTS @S.entries(
  id text PRIMARY KEY, name text NOT NULL, kind smallint NOT NULL, token bigint NOT NULL,
  session text NOT NULL, created timestamptz NOT NULL, UNIQUE (name, token));
CREATE INDEX IF NOT EXISTS entries_session ON @S.entries(session);
-- Version 2: the server process (pid and start) of the session's connection. The
-- connection is the session: once it is gone the session can never be renewed, and
-- waiters treat its entries as dead without waiting out the lease.
ALTER TABLE @S.sessions ADD COLUMN IF NOT EXISTS pid integer,
  ADD COLUMN IF NOT EXISTS started timestamptz;
-- Entry values (key entry_values): an election candidate's value and how many times it was
-- set. Defaults make the columns free to add and leave older clients' inserts valid.
ALTER TABLE @S.entries ADD COLUMN IF NOT EXISTS value bytea NOT NULL DEFAULT '',
  ADD COLUMN IF NOT EXISTS version bigint NOT NULL DEFAULT 0;

-- Whether the server process behind a session still runs. backend_start is visible only
-- to the same role (or pg_read_all_stats); where it is hidden the pid alone decides.
CREATE OR REPLACE FUNCTION @S.conn_alive(p_pid integer, p_started timestamptz)
RETURNS boolean LANGUAGE sql STABLE AS $$
  SELECT p_pid IS NULL OR EXISTS (
    SELECT 1 FROM pg_stat_get_activity(p_pid) a WHERE a.pid = p_pid
      AND (a.backend_start IS NULL OR p_started IS NULL OR a.backend_start = p_started))
$$;

-- The session of this connection, if it is still live. A session opened through a
-- transaction pooler has no server process of its own (pid NULL): only its lease counts.
CREATE OR REPLACE FUNCTION @S.own_session(p_session text) RETURNS boolean
LANGUAGE sql STABLE AS $$
  SELECT EXISTS (SELECT 1 FROM @S.sessions s WHERE s.id = p_session
    AND s.expires > clock_timestamp() AND (s.pid IS NULL OR s.pid = pg_backend_pid()))
$$;

-- Fencing tokens of ?mode=advisory (pg_advisory_lock has no counter of its own).
CREATE SEQUENCE IF NOT EXISTS @S.advisory_fence;

-- One channel per entry, so a release wakes only the waiters of that entry.
CREATE OR REPLACE FUNCTION @S.channel(p_id text) RETURNS text
LANGUAGE sql IMMUTABLE AS $$ SELECT 'dlock_' || md5(p_id) $$;

CREATE OR REPLACE FUNCTION @S.entry_gone() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify(@S.channel(OLD.id), '');
  RETURN NULL;
END $$;
DROP TRIGGER IF EXISTS entry_gone ON @S.entries;
CREATE TRIGGER entry_gone AFTER DELETE ON @S.entries
  FOR EACH ROW EXECUTE FUNCTION @S.entry_gone();

-- p_reset drops the LISTENs of finished waits in the same round trip.
CREATE OR REPLACE FUNCTION @S.listen(p_id text, p_reset boolean) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE ch text := @S.channel(p_id);
BEGIN
  IF p_reset THEN
    UNLISTEN *;
  END IF;
  EXECUTE format('LISTEN %I', ch);
  RETURN ch;
END $$;

-- The live queue of one lock. Entries of lapsed sessions, and of sessions whose connection
-- is gone, are deleted on the way (with those sessions, so they can never be renewed); the
-- caller's own session (p_session) is known to be alive, so an uncontended call never
-- looks at the server's process list.
CREATE OR REPLACE FUNCTION @S.queue_values(p_name text, p_session text)
RETURNS TABLE(r_id text, r_kind smallint, r_token bigint, r_created_ms bigint, r_owner text,
              r_lease_ms bigint, r_value text, r_version bigint)
LANGUAGE plpgsql AS $$
DECLARE t timestamptz := clock_timestamp();
BEGIN
  -- The server reads its process list once per transaction and keeps it: a session whose
  -- connection began after that (and whose entry a later statement here sees) would read as
  -- dead and be deleted. A fresh list for this call, taken after its rows' snapshots.
  PERFORM pg_stat_clear_snapshot();
  -- Per distinct session, not per entry: 1000 waiters from 8 sessions are 8 process-list
  -- look-ups, not 1000 (version 3; per entry, 1000 waiters starved the sessions' renewals).
  IF EXISTS (SELECT 1 FROM (SELECT DISTINCT e.session FROM @S.entries e
                            WHERE e.name = p_name AND e.session IS DISTINCT FROM p_session) d
             LEFT JOIN @S.sessions s ON s.id = d.session
             WHERE s.id IS NULL OR s.expires <= t OR NOT @S.conn_alive(s.pid, s.started)) THEN
    DELETE FROM @S.sessions s WHERE s.id IN (
      SELECT DISTINCT e.session FROM @S.entries e WHERE e.name = p_name
        AND e.session IS DISTINCT FROM p_session)
      AND (s.expires <= t OR NOT @S.conn_alive(s.pid, s.started));
    DELETE FROM @S.entries e WHERE e.name = p_name AND NOT EXISTS (
      SELECT 1 FROM @S.sessions s WHERE s.id = e.session AND s.expires > t);
  END IF;
  RETURN QUERY
    SELECT e.id, e.kind, e.token, (extract(epoch FROM e.created) * 1000)::bigint, s.owner,
           (extract(epoch FROM (s.expires - t)) * 1000)::bigint, encode(e.value, 'hex'),
           e.version
    FROM @S.entries e JOIN @S.sessions s ON s.id = e.session
    WHERE e.name = p_name AND s.expires > t ORDER BY e.token;
END $$;

-- What clients before entry values call (the same rows without the value): kept so that they
-- go on working beside this version. One body, in queue_values.
CREATE OR REPLACE FUNCTION @S.queue(p_name text, p_session text)
RETURNS TABLE(r_id text, r_kind smallint, r_token bigint, r_created_ms bigint, r_owner text,
              r_lease_ms bigint)
LANGUAGE sql AS $$
  SELECT r_id, r_kind, r_token, r_created_ms, r_owner, r_lease_ms
  FROM @S.queue_values(p_name, p_session)
$$;

-- Idempotent on the entry id: a retry after a lost reply finds the entry it created. The
-- fence_hot row stays locked until commit, so tokens commit in order and queue order is token
-- order.
-- A token from the block in use commits without waiting for the WAL flush when the session is
-- bound to its connection's server process: a crash that loses the commit also ends that
-- process, so the entry's session is dead to every waiter whether or not the entry survived,
-- and the next token comes from a new block. A pooled session (pid NULL) lives by its lease
-- alone, so its entry must survive: it always waits for the flush. A block is used only
-- while fences still holds the bound it was reserved under: should anything else raise it
-- (an older dlock's functions, reinstalled), no token below one it granted can follow.
-- Why enable_seqscan = off here and in remove_entry: every acquire and release inserts and
-- deletes an entry, so between two autovacuums entries and its indexes fill with dead rows
-- that the statistics do not count. To the planner the table then looks nearly empty and its
-- indexes huge for it, so it scanned the heap (and every dead row in it) for the entry's id
-- instead of probing the index: an uncontended cycle slowed from 0.3 to 1.3 ms within seconds
-- of churn, until the next vacuum. (It holds for the queue_values called here too; a listing
-- on its own plans as the statistics say, which measured faster with a few live entries.)
CREATE OR REPLACE FUNCTION @S.enqueue_values(p_session text, p_name text, p_id text,
                                             p_kind smallint)
RETURNS TABLE(r_id text, r_kind smallint, r_token bigint, r_created_ms bigint, r_owner text,
              r_lease_ms bigint, r_value text, r_version bigint)
LANGUAGE plpgsql SET enable_seqscan = off AS $$
DECLARE
  t bigint;
  b bigint;
  pooled boolean;
BEGIN
  SELECT s.pid IS NULL INTO pooled FROM @S.sessions s WHERE s.id = p_session
    AND s.expires > clock_timestamp() AND (s.pid IS NULL OR s.pid = pg_backend_pid());
  IF NOT FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'DL001', MESSAGE = 'dlock session ' || p_session || ' expired';
  END IF;
  PERFORM 1 FROM @S.entries e WHERE e.id = p_id;
  IF NOT FOUND THEN
    -- The fence_hot row is locked first, always, and fences after it: the one order of the
    -- two locks, so concurrent acquires cannot deadlock. (An UPDATE whose condition fails
    -- after waiting still keeps the row locked, so a conditional UPDATE here made a cycle
    -- with a block's reservation.) A missing row is created first, holding nothing.
    UPDATE @S.fence_hot h SET fence = h.fence + 1 WHERE h.name = p_name
      RETURNING h.fence, h.bound INTO t, b;
    IF NOT FOUND THEN
      INSERT INTO @S.fence_hot(name, fence, bound) VALUES (p_name, 0, 0)
        ON CONFLICT (name) DO NOTHING;
      UPDATE @S.fence_hot h SET fence = h.fence + 1 WHERE h.name = p_name
        RETURNING h.fence, h.bound INTO t, b;
    END IF;
    IF t <= b AND b = (SELECT f.fence FROM @S.fences f WHERE f.name = p_name) THEN
      IF NOT pooled THEN
        PERFORM set_config('synchronous_commit', 'off', true);
      END IF;
    ELSE
      INSERT INTO @S.fences AS f(name, fence) VALUES (p_name, 32)
        ON CONFLICT (name) DO UPDATE SET fence = f.fence + 32 RETURNING f.fence INTO b;
      t := b - 31;
      UPDATE @S.fence_hot SET fence = t, bound = b WHERE name = p_name;
    END IF;
    INSERT INTO @S.entries(id, name, kind, token, session, created)
      VALUES (p_id, p_name, p_kind, t, p_session, clock_timestamp());
  END IF;
  RETURN QUERY SELECT * FROM @S.queue_values(p_name, p_session);
END $$;

CREATE OR REPLACE FUNCTION @S.enqueue(p_session text, p_name text, p_id text, p_kind smallint)
RETURNS TABLE(r_id text, r_kind smallint, r_token bigint, r_created_ms bigint, r_owner text,
              r_lease_ms bigint)
LANGUAGE sql AS $$
  SELECT r_id, r_kind, r_token, r_created_ms, r_owner, r_lease_ms
  FROM @S.enqueue_values(p_session, p_name, p_id, p_kind)
$$;

-- A release (remove), as one function for its enable_seqscan (see enqueue_values): how many
-- removed entries still belonged to a live session, 0 meaning the entry was gone or its lease
-- had ended (lock_lost). p_lazy commits without waiting for the WAL flush.
CREATE OR REPLACE FUNCTION @S.remove_entry(p_name text, p_id text, p_session text,
                                          p_lazy boolean)
RETURNS bigint LANGUAGE plpgsql SET enable_seqscan = off AS $$
DECLARE n bigint;
BEGIN
  IF p_lazy THEN
    PERFORM set_config('synchronous_commit', 'off', true);
  END IF;
  WITH d AS (DELETE FROM @S.entries e WHERE e.name = p_name AND e.id = p_id
               AND e.session = p_session RETURNING e.session)
  SELECT count(*) INTO n FROM d JOIN @S.sessions s ON s.id = d.session
    WHERE s.expires > clock_timestamp();
  RETURN n;
END $$;

-- Election observers LISTEN on one channel per lock ("changed:" || name): a candidate that
-- joins or sets its value NOTIFYs it. Only candidates (ids ending in "~e"), so locks and
-- semaphores pay nothing; a candidate's removal already NOTIFYs its own channel.
CREATE OR REPLACE FUNCTION @S.candidate_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify(@S.channel('changed:' || NEW.name), '');
  RETURN NULL;
END $$;
DROP TRIGGER IF EXISTS candidate_changed ON @S.entries;
CREATE TRIGGER candidate_changed AFTER INSERT OR UPDATE OF value ON @S.entries
  FOR EACH ROW WHEN (NEW.id LIKE '%~e') EXECUTE FUNCTION @S.candidate_changed();

INSERT INTO @S.meta(key, value) VALUES ('schema_version', '3')
  ON CONFLICT (key) DO UPDATE SET value = '3';
-- Still version 3 (older dlock versions keep working): own_session accepts pooled sessions.
INSERT INTO @S.meta(key, value) VALUES ('pooled_sessions', '1') ON CONFLICT (key) DO NOTHING;
-- Still version 3: entries carry values (elections); older clients use queue and enqueue.
INSERT INTO @S.meta(key, value) VALUES ('entry_values', '1') ON CONFLICT (key) DO NOTHING;
-- Still version 3: queue takes a fresh process list per call (older clients unaffected).
INSERT INTO @S.meta(key, value) VALUES ('fresh_activity', '1') ON CONFLICT (key) DO NOTHING;
-- Still version 3: tokens come in durable blocks (fence_hot), releases go through
-- remove_entry, and the hot functions plan without heap scans. Older clients call the same
-- enqueue functions, so they take their tokens the same way.
INSERT INTO @S.meta(key, value) VALUES ('fence_blocks', '1') ON CONFLICT (key) DO NOTHING;
COMMIT;
)sql";

}  // namespace

bool valid_schema_name(const std::string& schema) {
  if (schema.empty() || schema.size() > 63 || (schema[0] >= '0' && schema[0] <= '9')) return false;
  for (char c : schema) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
  }
  return true;
}

std::string with_schema(std::string sql, const std::string& schema) {
  const std::string quoted = "\"" + schema + "\"";
  for (auto pos = sql.find("@S"); pos != std::string::npos; pos = sql.find("@S", pos)) {
    sql.replace(pos, 2, quoted);
    pos += quoted.size();
  }
  return sql;
}

namespace {

// Whether the schema holds everything this dlock needs: one query. backend_error if it is
// newer than this dlock understands.
result<bool> current(conn& c, const std::string& schema) {
  // A missing schema or table is an error here, and a reason to run the DDL.
  auto check = c.exec(
      with_schema("SELECT value, EXISTS (SELECT 1 FROM @S.meta WHERE key = 'pooled_sessions')"
                  " AND EXISTS (SELECT 1 FROM @S.meta WHERE key = 'entry_values')"
                  " AND EXISTS (SELECT 1 FROM @S.meta WHERE key = 'fresh_activity')"
                  " AND EXISTS (SELECT 1 FROM @S.meta WHERE key = 'fence_blocks')"
                  " FROM @S.meta WHERE key = 'schema_version'",
                  schema));
  if (!check) {
    if (is_transient(check.error())) return fail(check.error());
    return false;
  }
  if (check->count() != 1) return false;
  auto version = check->i64(0, 0);
  if (version > schema_version) {
    return fail(errc::backend_error,
                c.where() + ": schema \"" + schema + "\" has version " + std::to_string(version) +
                    ", newer than this dlock understands (" + std::to_string(schema_version) + ")");
  }
  return version == schema_version && check->text(0, 1) == "t";
}

}  // namespace

result<void> ensure_schema(conn& c, const std::string& schema) {
  // The common case costs one query; DDL (and its locks) only on first use.
  auto first = current(c, schema);
  if (!first) return fail(first.error());
  if (*first) return {};
  if (!c.usable()) return fail(errc::backend_unavailable, c.where() + ": connection lost");
  const auto failed = [&](const failure& f) {
    if (c.usable()) (void)c.exec("ROLLBACK");
    return fail(failure{f.code, f.message + " (creating schema \"" + schema + "\")"});
  };
  if (auto locked = c.exec(ddl_lock); !locked) return failed(locked.error());
  // Look again under the lock: sessions that start together on a new schema all find it
  // missing and queue here, and each but the first would run the DDL again on a schema already
  // in use, its ALTER TABLEs and function replacements waiting for (and deadlocking with) the
  // first sessions' acquires. The look only reads when the table exists: a failed statement
  // would abort the transaction.
  auto exists = c.exec(with_schema("SELECT to_regclass('@S.meta') IS NOT NULL", schema));
  if (!exists) return failed(exists.error());
  if (exists->count() == 1 && exists->text(0, 0) == "t") {
    auto again = current(c, schema);
    if (!again) return failed(again.error());
    if (*again) {
      if (auto done = c.exec("COMMIT"); !done) return failed(done.error());
      return {};
    }
  }
  if (auto r = c.exec(with_schema(ddl, schema)); !r) return failed(r.error());
  return {};
}

result<void> claim_mode(conn& c, const std::string& schema, std::string_view mode, bool record) {
  // The first session to open records its mode; ON CONFLICT keeps the record of a session
  // that raced this one, and the SELECT reads whichever won. An observer (status, doctor)
  // only reads it: looking must not decide the mode.
  const std::string put = record ? "INSERT INTO @S.meta(key, value) VALUES ('mode', '" +
                                       std::string(mode) + "') ON CONFLICT (key) DO NOTHING; "
                                 : "";
  auto r = c.exec(with_schema(put + "SELECT value FROM @S.meta WHERE key = 'mode'", schema));
  if (!r) return fail(failure{r.error().code, r.error().message + " (recording the mode)"});
  if (!record && r->count() == 0) return {};
  if (r->count() != 1) return fail(errc::protocol_error, c.where() + ": no mode recorded");
  const auto held = r->text(0, 0);
  if (held == mode) return {};
  return fail(errc::invalid_argument,
              c.where() + ": schema \"" + schema + "\" holds mode=" + held +
                  " locks, and mode=" + std::string(mode) +
                  " locks there would not exclude them (each mode sees only its own): use "
                  "mode=" +
                  held + " on every client of this schema, or another ?schema= for mode=" +
                  std::string(mode) + " (once no mode=" + held + " client is left: DELETE FROM \"" +
                  schema + "\".meta WHERE key = 'mode')");
}

}  // namespace dlock::detail::pg
