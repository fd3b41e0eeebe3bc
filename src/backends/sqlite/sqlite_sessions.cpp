#include "backends/sqlite/sqlite_sessions.hpp"

namespace dlock::detail::sqlite {

result<void> insert_session(db& d, std::string_view id, std::string_view owner,
                            const process_id& me, std::string_view boot, std::int64_t expires_ms) {
  auto s = d.prepare(
      "INSERT INTO dlock_sessions(id, owner, host, pid, pid_start, boot_id, expires_boot_ms) "
      "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)");
  if (!s) return fail(s.error());
  return s->bind(1, id)
      .bind(2, owner)
      .bind(3, me.host)
      .bind(4, me.pid)
      .bind(5, me.start)
      .bind(6, boot)
      .bind(7, expires_ms)
      .run();
}

result<bool> renew_session(db& d, std::string_view id, std::string_view boot, std::int64_t now_ms,
                           std::int64_t expires_ms) {
  auto s = d.prepare(
      "UPDATE dlock_sessions SET expires_boot_ms = ?2 "
      "WHERE id = ?1 AND boot_id = ?4 AND expires_boot_ms > ?3");
  if (!s) return fail(s.error());
  if (auto r = s->bind(1, id).bind(2, expires_ms).bind(3, now_ms).bind(4, boot).run(); !r) {
    return fail(r.error());
  }
  return d.changes() > 0;
}

result<void> session_live(db& d, std::string_view id, std::string_view boot, std::int64_t now_ms) {
  auto s = d.prepare(
      "SELECT 1 FROM dlock_sessions WHERE id = ?1 AND boot_id = ?3 AND expires_boot_ms > ?2");
  if (!s) return fail(s.error());
  auto row = s->bind(1, id).bind(2, now_ms).bind(3, boot).step();
  if (!row) return fail(row.error());
  if (!*row) return fail(errc::session_expired, "sqlite session " + std::string(id) + " expired");
  return {};
}

result<bool> session_over(db& d, std::string_view id, std::string_view boot, std::int64_t now_ms,
                          const std::function<bool(const process_id&)>& alive) {
  auto s = d.prepare(
      "SELECT host, pid, pid_start, CASE WHEN boot_id = ?2 THEN expires_boot_ms ELSE 0 END "
      "FROM dlock_sessions WHERE id = ?1");
  if (!s) return fail(s.error());
  auto row = s->bind(1, id).bind(2, boot).step();
  if (!row) return fail(row.error());
  if (!*row) return true;
  return !(s->i64(3) > now_ms && alive({s->text(0), s->i64(1), s->i64(2)}));
}

result<void> delete_session(db& d, std::string_view id, std::vector<std::string>& removed) {
  auto ids = d.prepare("SELECT id FROM dlock_entries WHERE session = ?1");
  if (!ids) return fail(ids.error());
  ids->bind(1, id);
  for (;;) {
    auto row = ids->step();
    if (!row) return fail(row.error());
    if (!*row) break;
    removed.push_back(ids->text(0));
  }
  for (const char* sql : {"DELETE FROM dlock_entries WHERE session = ?1",
                          "DELETE FROM dlock_sessions WHERE id = ?1"}) {
    auto s = d.prepare(sql);
    if (!s) return fail(s.error());
    if (auto r = s->bind(1, id).run(); !r) return r;
  }
  return {};
}

}  // namespace dlock::detail::sqlite
