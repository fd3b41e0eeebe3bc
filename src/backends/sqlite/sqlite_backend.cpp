// The SQLite backend; its tables are in sqlite_schema.hpp. An entry is alive while its
// session's lease runs and its process exists. A lease ends at expires_boot_ms on
// CLOCK_BOOTTIME of the boot named boot_id: every process of the host shares that clock and
// nothing steps it (an NTP step or `date -s` moves only the wall clock, which decided leases
// in version 1), and a lease of another boot is over. The wall clock only dates entries for
// display (created_ms). Writes use BEGIN IMMEDIATE so the write lock is taken up front (a
// deferred upgrade returns SQLITE_BUSY without waiting).
#include "backends/sqlite/sqlite_backend.hpp"

#include <algorithm>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

#include "backends/sqlite/file_system.hpp"
#include "backends/sqlite/local_process.hpp"
#include "backends/sqlite/local_wake.hpp"
#include "backends/sqlite/session_mark.hpp"
#include "backends/sqlite/shared_file.hpp"
#include "backends/sqlite/sqlite_db.hpp"
#include "backends/sqlite/sqlite_doctor.hpp"
#include "backends/sqlite/sqlite_rows.hpp"
#include "backends/sqlite/sqlite_schema.hpp"
#include "backends/sqlite/sqlite_sessions.hpp"
#include "core/poll_pacer.hpp"

namespace dlock::detail {
namespace {

using sqlite::db;

// Entries of one lock with what decides whether each is alive; ?2 is this boot's id, and a
// session of another boot (or none) reads as a lease that ended at 0.
constexpr const char* queue_sql = R"sql(
SELECT e.id, e.kind, e.token, e.created_ms, e.session, s.owner, s.host, s.pid, s.pid_start,
       CASE WHEN s.boot_id = ?2 THEN s.expires_boot_ms ELSE 0 END, e.value, e.version
FROM dlock_entries e LEFT JOIN dlock_sessions s ON s.id = e.session
WHERE e.name = ?1 ORDER BY e.token)sql";

// Lease time: CLOCK_BOOTTIME (see the top of the file).
std::int64_t now_ms() { return boot_clock_ms(); }

// Creation times shown to people.
std::int64_t wall_ms() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

class sqlite_session final : public backend_session {
 public:
  sqlite_session(db d, session_info info)
      : db_(std::move(d)),
        info_(std::move(info)),
        wake_(db_.path()),
        marks_(db_.path(), !info_.observe_only) {}

  result<void> start() {
    std::lock_guard lk(mu_);
    if (boot_.empty()) {
      return fail(errc::unsupported,
                  "cannot read this boot's id (/proc/sys/kernel/random/boot_id), which dates "
                  "every lease");
    }
    if (info_.observe_only) return {};  // writes nothing: no schema, no session row
    if (auto r = db_.exec("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"); !r) return r;
    auto me = this_process();
    marks_.set(info_.id);  // before the row: a reader never sees the row unmarked and us dead
    return write_txn([&]() -> result<void> {
      if (auto r = sqlite::prepare_schema(db_, boot_, now_ms(), wall_ms()); !r) return r;
      return sqlite::insert_session(db_, info_.id, info_.owner, me, boot_,
                                    now_ms() + info_.ttl.count());
    });
  }

  // A holder's process is checked by pid (and start time) on this host.
  capabilities caps() const noexcept override {
    return {.scope = reach::host,
            .durable_tokens = true,
            .frees_dead_process_at_once = true,
            .ends_other_sessions = true,
            .permits = true,
            .values = true};
  }

  result<std::vector<check_finding>> diagnose() override {
    return sqlite::file_findings(db_.path());
  }

  result<queue_view> enqueue(std::string_view lock, entry_kind kind, std::string_view id) override {
    std::lock_guard lk(mu_);
    auto sent = steady::now();
    queue_view view;
    auto r = write_txn([&]() -> result<void> {
      if (auto live = session_live(); !live) return live;
      auto exists = db_.prepare("SELECT 1 FROM dlock_entries WHERE id = ?1");
      if (!exists) return fail(exists.error());
      auto found = exists->bind(1, id).step();
      if (!found) return fail(found.error());
      if (!*found) {
        // The per-name counter is bumped in the same transaction as the insert.
        auto fence = db_.prepare(
            "INSERT INTO dlock_fences(name, fence) VALUES (?1, 1) "
            "ON CONFLICT(name) DO UPDATE SET fence = fence + 1 RETURNING fence");
        if (!fence) return fail(fence.error());
        auto row = fence->bind(1, lock).step();
        if (!row) return fail(row.error());
        auto token = fence->i64(0);
        if (auto done = fence->run(); !done) return done;
        auto ins = db_.prepare(
            "INSERT INTO dlock_entries(name, id, kind, token, session, created_ms) "
            "VALUES (?1, ?2, ?3, ?4, ?5, ?6)");
        if (!ins) return fail(ins.error());
        auto ok = ins->bind(1, lock)
                      .bind(2, id)
                      .bind(3, static_cast<std::int64_t>(kind))
                      .bind(4, token)
                      .bind(5, info_.id)
                      .bind(6, wall_ms())
                      .run();
        if (!ok) return ok;
      }
      auto q = read_queue(lock);
      if (!q) return fail(q.error());
      view = std::move(*q);
      return {};
    });
    if (!r) return fail(r.error());
    wake_.notify_changed(lock);
    view.sent_at = sent;
    return view;
  }

  result<queue_view> list(std::string_view lock) override {
    std::lock_guard lk(mu_);
    auto sent = steady::now();
    auto q = read_queue(lock);
    if (!q) return q;
    q->sent_at = sent;
    return q;
  }

  result<void> remove(std::string_view lock, std::string_view id) override {
    std::lock_guard lk(mu_);
    // An entry whose session's lease ended is not ours any more (others ignore it): removed
    // all the same, but reported as lock_lost, like one already gone.
    auto live = session_live();
    if (!live && live.error().code != make_error_code(errc::session_expired)) return live;
    auto s = db_.prepare("DELETE FROM dlock_entries WHERE name = ?1 AND id = ?2 AND session = ?3");
    if (!s) return fail(s.error());
    if (auto r = s->bind(1, lock).bind(2, id).bind(3, info_.id).run(); !r) return r;
    bool removed = db_.changes() > 0;
    if (removed) {
      wake_.notify(id);
      wake_.notify_changed(lock);
    }
    if (!removed || !live) {
      return fail(errc::lock_lost, "sqlite entry " + std::string(id) + " of '" + std::string(lock) +
                                       "' is gone (lease ended)");
    }
    return {};
  }

  result<void> wait(std::string_view lock, const entry& awaited, steady::time_point deadline,
                    std::stop_token stop) override {
    return wait_any(lock, std::span<const entry>(&awaited, 1), deadline, std::move(stop));
  }

  result<void> wait_any(std::string_view /*lock*/, std::span<const entry> awaited,
                        steady::time_point deadline, std::stop_token stop) override {
    // Woken by the remover through local_wake; the paced poll (core/poll_pacer.hpp) is the
    // safety net for holders that crash or lose their lease, slower when every wake-up can
    // reach us.
    std::vector<local_wake::listener> listeners;  // before the check: no lost wake-up
    bool all_bound = true;
    for (const auto& e : awaited) {
      listeners.push_back(wake_.listen(e.id));
      all_bound &= listeners.back().bound();
    }
    poll_pacer pacer{std::chrono::milliseconds{1}, std::chrono::milliseconds{all_bound ? 200 : 32}};
    while (!stop.stop_requested() && steady::now() < deadline) {
      {
        std::lock_guard lk(mu_);
        for (const auto& e : awaited) {
          auto alive = entry_alive(e.id);
          if (!alive) return fail(alive.error());
          if (!*alive) return {};  // gone, or its holder is dead: the engine lists (and reaps)
        }
      }
      auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - steady::now());
      auto timeout = std::min(std::chrono::ceil<std::chrono::milliseconds>(pacer.next()), left);
      if (local_wake::listener::wait_any(listeners, timeout, stop)) return {};
    }
    return {};
  }

  result<std::uint64_t> set_value(std::string_view lock, std::string_view id,
                                  std::string_view value) override {
    std::lock_guard lk(mu_);
    std::int64_t version = 0;
    auto r = write_txn([&]() -> result<void> {
      if (auto live = session_live(); !live) {
        if (live.error().code == make_error_code(errc::session_expired)) {
          return fail(errc::lock_lost, live.error().message);
        }
        return live;
      }
      auto s = db_.prepare(
          "UPDATE dlock_entries SET value = ?4, version = version + 1 "
          "WHERE name = ?1 AND id = ?2 AND session = ?3 RETURNING version");
      if (!s) return fail(s.error());
      auto row = s->bind(1, lock).bind(2, id).bind(3, info_.id).bind_blob(4, value).step();
      if (!row) return fail(row.error());
      if (!*row) {
        return fail(errc::lock_lost,
                    "sqlite entry " + std::string(id) + " of '" + std::string(lock) + "' is gone");
      }
      version = s->i64(0);
      return s->run();
    });
    if (!r) return fail(r.error());
    wake_.notify_changed(lock);
    return static_cast<std::uint64_t>(version);
  }

  result<void> wait_change(std::string_view lock, const queue_view& seen,
                           steady::time_point deadline, std::stop_token stop) override {
    // Pushed by enqueue, remove and set_value of this host; a leader that crashed or whose
    // lease ended is found by the next look, at most a slice later.
    std::vector<local_wake::listener> listeners;  // before the look: no lost wake-up
    listeners.push_back(wake_.listen_changed(lock));
    if (!seen.entries.empty()) listeners.push_back(wake_.listen(seen.entries.front().id));
    {
      std::lock_guard lk(mu_);
      auto now = read_queue(lock);
      if (!now) return fail(now.error());
      if (!same_entries(now->entries, seen.entries)) return {};
    }
    const bool pushed = listeners.front().bound();
    auto slice = std::chrono::milliseconds{pushed ? 200 : 32};
    auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - steady::now());
    auto timeout = std::max(std::chrono::milliseconds{0}, std::min(slice, left));
    (void)local_wake::listener::wait_any(listeners, timeout, stop);
    return {};
  }

  result<steady::time_point> keep_alive() override {
    if (info_.observe_only) return steady::now();  // no lease to renew
    std::lock_guard lk(mu_);
    auto sent = steady::now();
    auto now = now_ms();
    auto renewed = sqlite::renew_session(db_, info_.id, boot_, now, now + info_.ttl.count());
    if (!renewed) return fail(renewed.error());
    if (!*renewed) return fail(errc::session_expired, "sqlite session " + info_.id + " expired");
    return sent;
  }

  void close() noexcept override {
    std::lock_guard lk(mu_);
    if (closed_) return;
    for (int attempt = 0; attempt < 5 && !info_.observe_only; ++attempt) {
      std::vector<std::string> removed;
      auto r = write_txn([&]() -> result<void> { return delete_session(info_.id, removed); });
      if (r) notify_all(removed);
      if (r || !is_transient(r.error())) break;
      std::this_thread::sleep_for(std::chrono::milliseconds{10 << attempt});
    }
    marks_.clear(info_.id);
    closed_ = true;
  }

  result<void> end_session(std::string_view session_id) override {
    std::lock_guard lk(mu_);
    std::vector<std::string> removed;
    auto r = write_txn(
        [&]() -> result<void> { return delete_session(std::string(session_id), removed); });
    if (r) notify_all(removed);
    return r;
  }

  result<std::vector<std::string>> lock_names(std::string_view prefix) override {
    std::lock_guard lk(mu_);
    auto s = db_.prepare(
        "SELECT DISTINCT e.name FROM dlock_entries e JOIN dlock_sessions s ON s.id = e.session "
        "WHERE s.boot_id = ?3 AND s.expires_boot_ms > ?2 AND substr(e.name, 1, length(?1)) = ?1 "
        "ORDER BY e.name");
    if (!s) {
      if (no_tables_yet(s.error())) return std::vector<std::string>{};
      return fail(s.error());
    }
    s->bind(1, prefix).bind(2, now_ms()).bind(3, boot_);
    std::vector<std::string> out;
    for (;;) {
      auto row = s->step();
      if (!row) return fail(row.error());
      if (!*row) return out;
      out.push_back(s->text(0));
    }
  }

 private:
  // An observer may open a file that a first writer is still creating (or an empty file):
  // no tables yet is an empty queue to it, as a file that does not exist is.
  bool no_tables_yet(const failure& f) const {
    return info_.observe_only && f.message.find("no such table: dlock_") != std::string::npos;
  }

  template <class F>
  result<void> write_txn(F&& body) {
    if (closed_) return fail(errc::session_closed, "sqlite session closed");
    if (in_txn_) return body();  // nested: part of the enclosing transaction
    if (auto r = db_.exec("BEGIN IMMEDIATE"); !r) return r;
    in_txn_ = true;
    auto r = body();
    in_txn_ = false;
    if (r) r = db_.exec("COMMIT");
    if (!r) (void)db_.exec("ROLLBACK");
    return r;
  }

  result<void> session_live() { return sqlite::session_live(db_, info_.id, boot_, now_ms()); }

  void notify_all(const std::vector<std::string>& entry_ids) {
    for (auto& id : entry_ids) wake_.notify(id);
  }

  result<void> delete_session(const std::string& id, std::vector<std::string>& removed) {
    return sqlite::delete_session(db_, id, removed);
  }

  // A holder lives while its process does, or a fork of it that still has the session's
  // mark (session_mark.hpp); its lease is checked apart.
  bool holder_alive(const process_id& p, std::string_view session) const {
    return process_alive(p) || marks_.held_elsewhere(session);
  }

  // Whether entry `id` is stored and its session's lease and process are alive: one row,
  // so a waiter's poll costs the same however long the queue is.
  result<bool> entry_alive(const std::string& id) {
    if (closed_) return fail(errc::session_closed, "sqlite session closed");
    auto s = db_.prepare(
        "SELECT CASE WHEN s.boot_id = ?2 THEN s.expires_boot_ms ELSE 0 END, s.host, s.pid, "
        "s.pid_start, s.id FROM dlock_entries e JOIN dlock_sessions s ON s.id = e.session "
        "WHERE e.id = ?1");
    if (!s) return fail(s.error());
    auto row = s->bind(1, id).bind(2, boot_).step();
    if (!row) return fail(row.error());
    if (!*row) return false;
    return s->i64(0) > now_ms() && holder_alive({s->text(1), s->i64(2), s->i64(3)}, s->text(4));
  }

  // The live entries of `lock` in order; entries of dead sessions are dropped from the
  // view and then deleted, with their sessions, in a write transaction of their own.
  result<queue_view> read_queue(std::string_view lock) {
    if (closed_) return fail(errc::session_closed, "sqlite session closed");
    auto s = db_.prepare(queue_sql);
    if (!s) {
      if (no_tables_yet(s.error())) return queue_view{};
      return fail(s.error());
    }
    s->bind(1, lock).bind(2, boot_);
    queue_view v;
    std::vector<std::string> dead;
    auto now = now_ms();
    for (;;) {
      auto row = s->step();
      if (!row) return fail(row.error());
      if (!*row) break;
      auto r = sqlite::read_queue_row(*s);
      // Our own process is alive; for others, /proc is read (once per entry and look).
      bool mine = r.session == info_.id;
      if (!sqlite::lease_runs(r, now) || (!mine && !holder_alive(r.process, r.session))) {
        dead.push_back(r.session);
        continue;
      }
      v.entries.push_back(sqlite::row_entry(r, now));
    }
    if (!dead.empty() && !info_.observe_only) reap(dead);  // an observer only skips them
    return v;
  }

  void reap(const std::vector<std::string>& sessions) {
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

  std::mutex mu_;
  db db_;
  session_info info_;
  const std::string boot_{boot_id()};
  local_wake wake_;
  sqlite::session_mark marks_;
  bool closed_{false};
  bool in_txn_{false};
};

}  // namespace

result<std::unique_ptr<backend_session>> open_sqlite(const url& u, const session_info& info) {
  if (!u.hosts.empty() || u.path.empty() || u.path == "/") {
    return fail(errc::invalid_argument,
                "URL '" + u.redacted + "': want sqlite:///path/to/locks.db (an absolute path)");
  }
  if (auto r = sqlite::check_local_file_system(u.path); !r) return fail(r.error());
  auto busy_ms = static_cast<int>(info.request_timeout.count());
  if (!info.observe_only) sqlite::create_group_shared(u.path);
  auto d = info.observe_only ? db::open_read_only(u.path, busy_ms) : db::open(u.path, busy_ms);
  if (!d) return fail(d.error());
  auto s = std::make_unique<sqlite_session>(std::move(*d), info);
  if (auto r = s->start(); !r) {
    auto& m = r.error().message;
    if (m.find("'" + u.path + "'") != std::string::npos) return fail(r.error());
    return fail(failure{r.error().code, "sqlite database '" + u.path + "': " + m});
  }
  return s;
}

}  // namespace dlock::detail
