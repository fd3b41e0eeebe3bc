-- dlock's PostgreSQL DDL of schema version 3 before entry values, verbatim from
-- src/backends/postgres/pg_schema.cpp at commit ffc1f3b ("@S" stands for the quoted schema).
BEGIN;
SELECT pg_advisory_xact_lock(7234315448311949163);
CREATE SCHEMA IF NOT EXISTS @S;
CREATE TABLE IF NOT EXISTS @S.meta(key text PRIMARY KEY, value text NOT NULL);
CREATE TABLE IF NOT EXISTS @S.sessions(
  id text PRIMARY KEY, owner text NOT NULL, expires timestamptz NOT NULL);
CREATE TABLE IF NOT EXISTS @S.fences(name text PRIMARY KEY, fence bigint NOT NULL);
CREATE TABLE IF NOT EXISTS @S.entries(
  id text PRIMARY KEY, name text NOT NULL, kind smallint NOT NULL, token bigint NOT NULL,
  session text NOT NULL, created timestamptz NOT NULL, UNIQUE (name, token));
CREATE INDEX IF NOT EXISTS entries_session ON @S.entries(session);
-- Version 2: the server process (pid and start) of the session's connection. The
-- connection is the session: once it is gone the session can never be renewed, and
-- waiters treat its entries as dead without waiting out the lease.
ALTER TABLE @S.sessions ADD COLUMN IF NOT EXISTS pid integer,
  ADD COLUMN IF NOT EXISTS started timestamptz;

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
CREATE OR REPLACE FUNCTION @S.queue(p_name text, p_session text)
RETURNS TABLE(r_id text, r_kind smallint, r_token bigint, r_created_ms bigint, r_owner text,
              r_lease_ms bigint)
LANGUAGE plpgsql AS $$
DECLARE t timestamptz := clock_timestamp();
BEGIN
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
           (extract(epoch FROM (s.expires - t)) * 1000)::bigint
    FROM @S.entries e JOIN @S.sessions s ON s.id = e.session
    WHERE e.name = p_name AND s.expires > t ORDER BY e.token;
END $$;

-- Idempotent on the entry id: a retry after a lost reply finds the entry it created. The
-- fence row stays locked until commit, so tokens commit in order and queue order is token
-- order.
CREATE OR REPLACE FUNCTION @S.enqueue(p_session text, p_name text, p_id text, p_kind smallint)
RETURNS TABLE(r_id text, r_kind smallint, r_token bigint, r_created_ms bigint, r_owner text,
              r_lease_ms bigint)
LANGUAGE plpgsql AS $$
DECLARE t bigint;
BEGIN
  IF NOT @S.own_session(p_session) THEN
    RAISE EXCEPTION USING ERRCODE = 'DL001', MESSAGE = 'dlock session ' || p_session || ' expired';
  END IF;
  PERFORM 1 FROM @S.entries e WHERE e.id = p_id;
  IF NOT FOUND THEN
    INSERT INTO @S.fences AS f(name, fence) VALUES (p_name, 1)
      ON CONFLICT (name) DO UPDATE SET fence = f.fence + 1 RETURNING f.fence INTO t;
    INSERT INTO @S.entries(id, name, kind, token, session, created)
      VALUES (p_id, p_name, p_kind, t, p_session, clock_timestamp());
  END IF;
  RETURN QUERY SELECT * FROM @S.queue(p_name, p_session);
END $$;

INSERT INTO @S.meta(key, value) VALUES ('schema_version', '3')
  ON CONFLICT (key) DO UPDATE SET value = '3';
-- Still version 3 (older dlock versions keep working): own_session accepts pooled sessions.
INSERT INTO @S.meta(key, value) VALUES ('pooled_sessions', '1') ON CONFLICT (key) DO NOTHING;
COMMIT;
