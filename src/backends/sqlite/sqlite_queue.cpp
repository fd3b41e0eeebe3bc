// Reading a SQLite queue: which entries are alive (their session's lease runs and their
// holder's process, or a fork with its mark, exists), and the reaping of dead sessions that a
// read finds.
#include <string>
#include <unordered_map>
#include <vector>

#include "backends/sqlite/sqlite_rows.hpp"
#include "backends/sqlite/sqlite_session.hpp"
#include "backends/sqlite/sqlite_sessions.hpp"

namespace dlock::detail::sqlite {
namespace {

// Entries of one lock with what decides whether each is alive; ?2 is this boot's id, and a
// session of another boot (or none) reads as a lease that ended at 0.
constexpr const char* queue_sql = R"sql(
SELECT e.id, e.kind, e.token, e.created_ms, e.session, s.owner, s.host, s.pid, s.pid_start,
       CASE WHEN s.boot_id = ?2 THEN s.expires_boot_ms ELSE 0 END, e.value, e.version
FROM dlock_entries e LEFT JOIN dlock_sessions s ON s.id = e.session
WHERE e.name = ?1 ORDER BY e.token)sql";

}  // namespace

// A holder lives while its process does, or a fork of it that still has the session's
// mark (session_mark.hpp); its lease is checked apart.
bool session::holder_alive(const process_id& p, std::string_view session) const {
  return process_alive(p) || marks_.held_elsewhere(session);
}

// Whether entry `e` of `lock` is stored, and if so whether its session's lease and process
// are alive: one row found by (name, token), so a waiter's poll costs the same however long
// the queue is.
result<session::presence> session::entry_presence(std::string_view lock, const entry& e) {
  if (closed_) return fail(errc::session_closed, "sqlite session closed");
  auto s = db_.prepare(
      "SELECT CASE WHEN s.boot_id = ?2 THEN s.expires_boot_ms ELSE 0 END, s.host, s.pid, "
      "s.pid_start, e.session FROM dlock_entries e LEFT JOIN dlock_sessions s ON s.id = e.session "
      "WHERE e.name = ?3 AND e.token = ?4 AND e.id = ?1");
  if (!s) return fail(s.error());
  auto row = s->bind(1, e.id)
                 .bind(2, boot_)
                 .bind(3, lock)
                 .bind(4, static_cast<std::int64_t>(e.token))
                 .step();
  if (!row) return fail(row.error());
  if (!*row) return presence::gone;
  bool alive = s->i64(0) > now_ms() && holder_alive({s->text(1), s->i64(2), s->i64(3)}, s->text(4));
  return alive ? presence::alive : presence::dead;
}

// Whether any entry of `lock` is stored with a token below `e`'s, dead or alive: the first
// row of the (name, token) index.
result<bool> session::any_ahead(std::string_view lock, const entry& e) {
  auto s = db_.prepare("SELECT 1 FROM dlock_entries WHERE name = ?1 AND token < ?2 LIMIT 1");
  if (!s) return fail(s.error());
  auto row = s->bind(1, lock).bind(2, static_cast<std::int64_t>(e.token)).step();
  if (!row) return fail(row.error());
  return *row;
}

// The live entries of `lock` in order; entries of dead sessions are dropped from the
// view and then deleted, with their sessions, in a write transaction of their own.
result<queue_view> session::read_queue(std::string_view lock) {
  if (closed_) return fail(errc::session_closed, "sqlite session closed");
  if (!in_txn_) {  // a write transaction checked already
    if (auto same = same_file(); !same) return fail(same.error());
  }
  auto s = db_.prepare(queue_sql);
  if (!s) {
    if (no_tables_yet(s.error())) return queue_view{};
    return fail(s.error());
  }
  s->bind(1, lock).bind(2, boot_);
  queue_view v;
  std::vector<std::string> dead;
  // A session's entries share its process: /proc is read once per session and look, not once
  // per entry (1000 waiters in 8 processes: 8 reads, not 1000, for each woken waiter's look).
  std::unordered_map<std::string, bool> alive_by_session;
  auto now = now_ms();
  for (;;) {
    auto row = s->step();
    if (!row) return fail(row.error());
    if (!*row) break;
    auto r = sqlite::read_queue_row(*s);
    // Our own process is alive.
    bool mine = r.session == info_.id;
    auto alive = [&] {
      auto [it, fresh] = alive_by_session.try_emplace(r.session, false);
      if (fresh) it->second = holder_alive(r.process, r.session);
      return it->second;
    };
    if (!sqlite::lease_runs(r, now) || (!mine && !alive())) {
      dead.push_back(r.session);
      continue;
    }
    v.entries.push_back(sqlite::row_entry(r, now));
  }
  if (!dead.empty() && !info_.observe_only) reap(dead);  // an observer only skips them
  return v;
}

void session::reap(const std::vector<std::string>& sessions) {
  // Best effort; a busy database just leaves the work to the next reader.
  std::vector<std::string> removed;
  auto r = write_txn([&]() -> result<void> {
    auto now = now_ms();
    for (auto& id : sessions) {
      // Re-check inside the transaction: the session may have renewed meanwhile.
      auto over = sqlite::session_over(db_, id, boot_, now,
                                       [&](const process_id& p) { return holder_alive(p, id); });
      if (!over) return fail(over.error());
      if (!*over) continue;
      if (auto d = delete_session(id, removed); !d) return d;
    }
    return {};
  });
  if (r) notify_all(removed);
}

}  // namespace dlock::detail::sqlite
