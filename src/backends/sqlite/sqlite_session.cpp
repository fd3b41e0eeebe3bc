// The engine's calls on a SQLite session: each takes the write transaction (BEGIN IMMEDIATE,
// see sqlite_backend.cpp) where it writes, and wakes this host's waiters through local_wake
// after it commits.
#include "backends/sqlite/sqlite_session.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>

#include "backends/sqlite/file_system.hpp"
#include "backends/sqlite/sqlite_doctor.hpp"
#include "backends/sqlite/sqlite_schema.hpp"
#include "backends/sqlite/sqlite_sessions.hpp"
#include "core/poll_pacer.hpp"

namespace dlock::detail::sqlite {
namespace {

// Creation times shown to people.
std::int64_t wall_ms() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

}  // namespace

session::session(db d, session_info info)
    : db_(std::move(d)),
      info_(std::move(info)),
      wake_(db_.path()),
      marks_(db_.file_name(), !info_.observe_only) {}

result<void> session::start(steady::time_point open_until) {
  std::lock_guard lk(mu_);
  db_.bound_busy_waits(open_until);
  struct unbound {
    db& d;
    ~unbound() { d.bound_busy_waits(std::nullopt); }  // later requests wait request_timeout
  } unbound_at_exit{db_};
  if (boot_.empty()) {
    // Out of descriptors is a passing shortage, not a host that lacks the file.
    const int e = boot_id_error();
    return fail(e == EMFILE || e == ENFILE ? errc::backend_unavailable : errc::unsupported,
                "cannot read this boot's id (/proc/sys/kernel/random/boot_id), which dates "
                "every lease: " +
                    std::string(std::strerror(e)));
  }
  // Before the first read, which makes the -wal and -shm beside the name opened; observers
  // too: they would read a file whose last commits are in another name's WAL.
  if (auto r = check_single_name(db_.path()); !r) return r;
  // Observers too: `dlock status` on another application's file would call every lock free.
  if (auto r = sqlite::refuse_foreign_file(db_); !r) return r;
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

result<std::vector<check_finding>> session::diagnose() { return sqlite::file_findings(db_.path()); }

result<queue_view> session::enqueue(std::string_view lock, entry_kind kind, std::string_view id) {
  std::lock_guard lk(mu_);
  auto sent = steady::now();
  queue_view view;
  auto r = write_txn([&]() -> result<void> {
    if (auto live = session_live(); !live) return live;
    // Already stored by an earlier try? Entries are keyed by (name, token), so this scans the
    // lock's queue, which the read below reads whole anyway.
    auto exists =
        db_.prepare("SELECT 1 FROM dlock_entries WHERE name = ?3 AND session = ?2 AND id = ?1");
    if (!exists) return fail(exists.error());
    auto found = exists->bind(1, id).bind(2, info_.id).bind(3, lock).step();
    if (!found) return fail(found.error());
    if (!*found) {
      // The per-name counter is bumped in the same transaction as the insert. OR FAIL, and no
      // RETURNING (it collects its rows in a temporary b-tree): a failed statement fails the
      // whole transaction here, so none needs a statement journal (a malloc and a free of a
      // page each, and with them two brk calls, in every acquire).
      auto bump = db_.prepare(
          "INSERT OR FAIL INTO dlock_fences(name, fence) VALUES (?1, 1) "
          "ON CONFLICT(name) DO UPDATE SET fence = fence + 1");
      if (!bump) return fail(bump.error());
      if (auto done = bump->bind(1, lock).run(); !done) return done;
      auto fence = db_.prepare("SELECT fence FROM dlock_fences WHERE name = ?1");
      if (!fence) return fail(fence.error());
      auto row = fence->bind(1, lock).step();
      if (!row) return fail(row.error());
      if (!*row) return fail(errc::backend_unavailable, "sqlite fencing counter not written");
      auto token = fence->i64(0);
      auto ins = db_.prepare(
          "INSERT OR FAIL INTO dlock_entries(name, id, kind, token, session, created_ms) "
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
  for (const auto& e : view.entries) {
    if (e.id == id)
      own_.insert_or_assign(std::string(id),
                            std::pair{std::string(lock), static_cast<std::int64_t>(e.token)});
  }
  // Only election observers listen for changes, and only a candidate's arrival can change a
  // leader (a leader's leaving wakes them through its own id). As PostgreSQL's trigger does,
  // locks and semaphores skip it: a datagram nobody reads still costs a system call per
  // acquire.
  if (id.ends_with("~e")) wake_.notify_changed(lock);  // candidate_entry_id
  view.sent_at = sent;
  return view;
}

result<queue_view> session::list(std::string_view lock) {
  std::lock_guard lk(mu_);
  auto sent = steady::now();
  auto q = read_queue(lock);
  if (!q) return q;
  q->sent_at = sent;
  return q;
}

result<void> session::remove(std::string_view lock, std::string_view id) {
  std::lock_guard lk(mu_);
  if (auto it = own_.find(id); it != own_.end()) own_.erase(it);  // no longer the renewal's
  // An entry whose session's lease ended is not ours any more (others ignore it): removed
  // all the same, but reported as lock_lost, like one already gone. The check and the delete
  // share one transaction: one lock of the file instead of a read's and then a write's.
  bool live = true;
  bool removed = false;
  auto r = write_txn([&]() -> result<void> {
    auto ok = session_live();
    if (!ok && ok.error().code != make_error_code(errc::session_expired)) return ok;
    live = static_cast<bool>(ok);
    // Found in token order and deleted by its key: a release is nearly always at the head,
    // so it reads one row however long the queue (no scan of it to its end).
    auto s = db_.prepare(
        "DELETE FROM dlock_entries WHERE name = ?1 AND token = (SELECT token FROM dlock_entries "
        "WHERE name = ?1 AND session = ?3 AND id = ?2 LIMIT 1)");
    if (!s) return fail(s.error());
    if (auto d = s->bind(1, lock).bind(2, id).bind(3, info_.id).run(); !d) return d;
    removed = db_.changes() > 0;
    return {};
  });
  if (!r) return r;
  if (removed) wake_.notify(id);  // its waiters, and election observers if it led
  if (!removed || !live) {
    return fail(errc::lock_lost, "sqlite entry " + std::string(id) + " of '" + std::string(lock) +
                                     "' is gone (lease ended)");
  }
  return {};
}

result<void> session::wait(std::string_view lock, const entry& awaited, steady::time_point deadline,
                           std::stop_token stop) {
  return wait_any(lock, std::span<const entry>(&awaited, 1), deadline, std::move(stop));
}

result<void> session::wait_any(std::string_view lock, std::span<const entry> awaited,
                               steady::time_point deadline, std::stop_token stop) {
  auto r = wait_for(lock, awaited, deadline, std::move(stop));
  if (!r) return fail(r.error());
  return {};
}

result<awaited_fate> session::wait_knowing(std::string_view lock, const entry& awaited,
                                           steady::time_point deadline, std::stop_token stop) {
  return wait_for(lock, std::span<const entry>(&awaited, 1), deadline, std::move(stop));
}

result<awaited_fate> session::wait_for(std::string_view lock, std::span<const entry> awaited,
                                       steady::time_point deadline, std::stop_token stop) {
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
      // A waiter in a deleted file would be granted there, beside a holder in the new one.
      if (auto same = same_file(); !same) return fail(same.error());
      for (const auto& e : awaited) {
        auto p = entry_presence(lock, e);
        if (!p) return fail(p.error());
        if (*p == presence::gone) {
          // The engine will decide from its last view, which holds our own entry: true while
          // our session's row is (another client ends a session with its entries in one
          // transaction). Else it lists, and finds ours gone.
          if (!session_live()) return awaited_fate::unknown;
          // Nothing stored ahead of it either: it left from the head, and the engine can
          // drop every entry ahead of it from its view (which, taken at our enqueue, still
          // lists waiters long gone) instead of listing the queue again.
          auto ahead = any_ahead(lock, e);
          if (!ahead) return fail(ahead.error());
          return *ahead ? awaited_fate::left : awaited_fate::left_head;
        }
        // Its holder is dead: the engine lists, which drops and reaps it.
        if (*p == presence::dead) return awaited_fate::unknown;
      }
    }
    auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - steady::now());
    auto timeout = std::min(std::chrono::ceil<std::chrono::milliseconds>(pacer.next()), left);
    (void)local_wake::listener::wait_any(listeners, timeout, stop);
  }
  return awaited_fate::unknown;
}

result<std::uint64_t> session::set_value(std::string_view lock, std::string_view id,
                                         std::string_view value) {
  std::lock_guard lk(mu_);
  std::int64_t version = 0;
  auto r = write_txn([&]() -> result<void> {
    if (auto live = session_live(); !live) {
      if (live.error().code == make_error_code(errc::session_expired)) {
        return fail(errc::lock_lost, live.error().message);
      }
      return live;
    }
    // Found in token order, as remove finds it (a leader is at the head).
    auto s = db_.prepare(
        "UPDATE OR FAIL dlock_entries SET value = ?4, version = version + 1 "
        "WHERE name = ?1 AND token = (SELECT token FROM dlock_entries WHERE name = ?1 AND "
        "session = ?3 AND id = ?2 LIMIT 1) RETURNING version");
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

result<void> session::wait_change(std::string_view lock, const queue_view& seen,
                                  steady::time_point deadline, std::stop_token stop) {
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

result<steady::time_point> session::keep_alive() {
  if (info_.observe_only) return steady::now();  // no lease to renew
  std::lock_guard lk(mu_);
  auto sent = steady::now();
  if (auto same = same_file(); !same) return fail(same.error());
  auto now = now_ms();
  auto renewed = sqlite::renew_session(db_, info_.id, boot_, now, now + info_.ttl.count());
  if (!renewed) return fail(renewed.error());
  if (!*renewed) return fail(errc::session_expired, "sqlite session " + info_.id + " expired");
  if (auto kept = entries_check_verdict(own_entries_kept()); !kept) return fail(kept.error());
  return sent;
}

void session::close() noexcept {
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

result<void> session::end_session(std::string_view session_id) {
  std::lock_guard lk(mu_);
  std::vector<std::string> removed;
  auto r =
      write_txn([&]() -> result<void> { return delete_session(std::string(session_id), removed); });
  if (r) notify_all(removed);
  return r;
}

result<std::vector<std::string>> session::lock_names(std::string_view prefix) {
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

result<void> session::own_entries_kept() {
  for (const auto& [id, where] : own_) {
    // By its key, (name, token): one row's look per entry, whatever the queue's length.
    auto s = db_.prepare("SELECT 1 FROM dlock_entries WHERE name = ?1 AND token = ?2 AND id = ?3");
    if (!s) return fail(s.error());
    auto row = s->bind(1, where.first).bind(2, where.second).bind(3, id).step();
    if (!row) return fail(row.error());
    if (!*row) {
      return fail(errc::session_expired,
                  "sqlite entry " + id + " of '" + where.first +
                      "' was deleted by another process, not released by this session: its lock "
                      "may have been granted to another, so every hold of this session is lost");
    }
  }
  return {};
}

result<void> session::session_live() {
  return sqlite::session_live(db_, info_.id, boot_, now_ms());
}

void session::notify_all(const std::vector<std::string>& entry_ids) {
  for (auto& id : entry_ids) wake_.notify(id);
}

result<void> session::delete_session(const std::string& id, std::vector<std::string>& removed) {
  return sqlite::delete_session(db_, id, removed);
}

}  // namespace dlock::detail::sqlite
