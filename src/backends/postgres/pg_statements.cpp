// The statements the PostgreSQL backend runs against its schema (pg_schema.hpp): the lease
// mode's server functions, the advisory mode's locks, and the lazy (unflushed) variants.
#include "backends/postgres/pg_schema.hpp"

namespace dlock::detail::pg {

statements make_statements(const std::string& schema) {
  auto s = [&](const char* name, const char* sql) {
    return statement{std::string("dlock_") + name, with_schema(sql, schema)};
  };
  return {
      s("open_session",
        "WITH old AS (DELETE FROM @S.sessions WHERE expires <= clock_timestamp() RETURNING id),"
        " gone AS (DELETE FROM @S.entries e USING old WHERE e.session = old.id)"
        " INSERT INTO @S.sessions(id, owner, expires, pid, started)"
        " SELECT $1, $2, clock_timestamp() + $3::float8 * interval '1 millisecond',"
        " a.pid, a.backend_start FROM pg_stat_get_activity(pg_backend_pid()) a"
        " ON CONFLICT (id) DO NOTHING"),
      s("enqueue", "SELECT * FROM @S.enqueue_values($1, $2, $3, $4::smallint)"),
      s("list", "SELECT * FROM @S.queue_values($1, $2)"),
      // Only a live session's own entry, on its own connection (as enqueue); the value comes
      // hex-encoded (parameters are text).
      s("set_value",
        "UPDATE @S.entries e SET value = decode($4, 'hex'), version = e.version + 1"
        " FROM @S.sessions s WHERE e.name = $1 AND e.id = $2 AND e.session = $3"
        " AND s.id = e.session AND s.expires > clock_timestamp()"
        " AND (s.pid IS NULL OR s.pid = pg_backend_pid()) RETURNING e.version"),
      // How many removed entries still belonged to a live session: 0 means the entry was
      // gone or its lease had ended (lock_lost). A function for its plan (remove_entry).
      s("remove", "SELECT @S.remove_entry($1, $2, $3, false)"),
      s("open_pooled_session",
        "WITH old AS (DELETE FROM @S.sessions WHERE expires <= clock_timestamp() RETURNING id),"
        " gone AS (DELETE FROM @S.entries e USING old WHERE e.session = old.id)"
        " INSERT INTO @S.sessions(id, owner, expires, pid, started)"
        " VALUES ($1, $2, clock_timestamp() + $3::float8 * interval '1 millisecond', NULL, NULL)"
        " ON CONFLICT (id) DO NOTHING"),
      s("keep_alive",
        "UPDATE @S.sessions SET expires = clock_timestamp() + $2::float8 * interval '1 millisecond'"
        " WHERE id = $1 AND expires > clock_timestamp()"
        " AND (pid IS NULL OR pid = pg_backend_pid())"),
      s("close",
        "WITH gone AS (DELETE FROM @S.entries WHERE session = $1)"
        " DELETE FROM @S.sessions WHERE id = $1"),
      s("lock_names",
        "SELECT DISTINCT e.name COLLATE \"C\" AS n FROM @S.entries e"
        " JOIN @S.sessions s ON s.id = e.session"
        " WHERE s.expires > clock_timestamp() AND starts_with(e.name, $1) ORDER BY n"),
      s("alive",
        "SELECT (extract(epoch FROM (s.expires - clock_timestamp())) * 1000)::bigint,"
        " @S.conn_alive(s.pid, s.started)"
        " FROM @S.entries e JOIN @S.sessions s ON s.id = e.session"
        " WHERE e.id = $1 AND s.expires > clock_timestamp()"),
      s("alive_any",
        "SELECT e.id, (extract(epoch FROM (s.expires - clock_timestamp())) * 1000)::bigint,"
        " @S.conn_alive(s.pid, s.started)"
        " FROM @S.entries e JOIN @S.sessions s ON s.id = e.session"
        " WHERE e.id = ANY($1::text[]) AND s.expires > clock_timestamp()"),
      s("listen", "SELECT @S.listen($1, $2::boolean)"),
      // ?mode=advisory; $1 is "schema:name", hashed to the 64-bit lock key by the server.
      s("adv_try_x",
        "SELECT CASE WHEN pg_try_advisory_lock(hashtextextended($1, 0))"
        " THEN nextval('@S.advisory_fence') END"),
      s("adv_try_s",
        "SELECT CASE WHEN pg_try_advisory_lock_shared(hashtextextended($1, 0))"
        " THEN nextval('@S.advisory_fence') END"),
      // NOTIFY only if some session waits (holds its shared "waiting" mark on key 1, so
      // the exclusive try on it fails): an uncontended release skips the notify queue.
      s("adv_unlock_x",
        "SELECT pg_advisory_unlock(hashtextextended($1, 0)),"
        " CASE WHEN pg_try_advisory_lock(hashtextextended($1, 1))"
        " THEN pg_advisory_unlock(hashtextextended($1, 1))"
        " ELSE pg_notify(@S.channel('advisory:' || $1), '') IS NULL END"),
      s("adv_unlock_s",
        "SELECT pg_advisory_unlock_shared(hashtextextended($1, 0)),"
        " CASE WHEN pg_try_advisory_lock(hashtextextended($1, 1))"
        " THEN pg_advisory_unlock(hashtextextended($1, 1))"
        " ELSE pg_notify(@S.channel('advisory:' || $1), '') IS NULL END"),
      s("adv_mark", "SELECT pg_advisory_lock_shared(hashtextextended($1, 1))"),
      s("adv_unmark", "SELECT pg_advisory_unlock_shared(hashtextextended($1, 1))"),
      s("ping", "SELECT 1"),
      // set_config(..., true) lasts until the statement's own (implicit) transaction ends,
      // after its commit record is written: one round trip, as the durable forms.
      s("remove_lazy", "SELECT @S.remove_entry($1, $2, $3, true)"),
      s("keep_alive_lazy",
        "UPDATE @S.sessions SET expires = clock_timestamp() + $2::float8 * interval '1 millisecond'"
        " FROM (SELECT set_config('synchronous_commit', 'off', true)) AS lazy"
        " WHERE id = $1 AND expires > clock_timestamp()"
        " AND (pid IS NULL OR pid = pg_backend_pid())"),
      s("close_lazy",
        "WITH lazy AS (SELECT set_config('synchronous_commit', 'off', true) AS v),"
        " gone AS (DELETE FROM @S.entries WHERE session = $1)"
        " DELETE FROM @S.sessions USING lazy WHERE id = $1 AND lazy.v IS NOT NULL"),
      s("own_entries", "SELECT id FROM @S.entries WHERE session = $1"),
  };
}

}  // namespace dlock::detail::pg
