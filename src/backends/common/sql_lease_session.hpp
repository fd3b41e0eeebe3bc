#pragma once
// The lease-mode session of the SQL servers (PostgreSQL, MySQL/MariaDB), written once: when a
// request runs, on which connection, and what its answer means to the engine. Each database
// supplies only what differs, as a `Db` object (ShedLock's JDBC providers share one storage
// accessor the same way, each database giving its `SqlStatementsSource`): its connection,
// the statement and parameters of each request, how to read the few answers whose shape
// differs, and how its waiters are woken (PostgreSQL LISTEN/NOTIFY, MySQL doorbells).
//
// The connection is the session (session_conn.hpp): its rows name the connection, so the
// server ending it ends the session, and its waiters take over at once.
//
// Db (all non-virtual; nothing here is called per row):
//   types conn, rows, param, statement; struct request { const statement& sql;
//     std::vector<param> params; } as Db::request
//   static constexpr std::string_view name            -- "postgres": "<name> entry ... is gone"
//   static capabilities caps()
//   static std::size_t count(const rows&)             -- rows of the answer
//   static void read_values(queue_view&)              -- listed values as the driver gave them
//   static std::optional<std::uint64_t> version_set(const rows&)  -- set_value's new version,
//                                                        nullopt if the entry is gone
//   static bool removed(const rows&)                  -- false: the entry was gone already
//   static bool renewed(const rows&)                  -- false: the session's row is gone
//   const std::string& where()
//   result<conn> connect_session()                    -- the session's (or its reconnect before
//     the session row exists), its client's own timeout request_guard::backstop()
//   result<conn> connect()                            -- a spare, an aside
//   result<void> open_session(conn&, const session_info&)  -- schema and session row
//   bool idle_fine(conn&)                             -- session_conn's idle_check
//   request enqueue(session, lock, id, kind), list(lock, session) (the session at index 1),
//     set_value(lock, id, session, value), remove(lock, id, session), keep_alive(session,
//     ttl), lock_names(prefix)
//   result<rows> own_entries(conn&, session, budget)  -- rows whose column 0 is an entry id of
//     the session, released ones it has not deleted yet included; a wait for a lock on the
//     table ends within `budget` (an error, not a lost connection)
//   optional: result<rows> tidy(conn&, session, budget) -- after each renewal, bounded alike
//   std::vector<request> goodbye(session)             -- this session's close, in order
//   std::vector<request> end_session(session)         -- another session's end, in order
//   void close_wakes() noexcept                       -- before the session's close
//   result<std::vector<check_finding>> findings(conn&)
//   template <class S> result<void> wait_any(S&, lock, awaited, deadline, stop) and
//     wait_change(S&, lock, seen, deadline, stop)     -- S: this session (run, list)
// Threads: as backend_session; Db's members are called from any thread.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "backends/common/queue_rows.hpp"
#include "backends/common/session_conn.hpp"
#include "core/backend.hpp"
#include "core/caller_deadline.hpp"

namespace dlock::detail {

template <class Db>
class sql_lease_session final : public backend_session {
 public:
  using conn = typename Db::conn;
  using rows = typename Db::rows;
  using param = typename Db::param;
  using statement = typename Db::statement;

  // `db_args` after the session's info construct the Db in place.
  template <class... A>
  explicit sql_lease_session(session_info info, A&&... db_args)
      : info_(std::move(info)),
        db_(info_, std::forward<A>(db_args)...),
        link_(
            db_.where(), info_.id, info_.request_timeout, [this] { return db_.connect_session(); },
            [this] { return db_.connect(); }) {}
  ~sql_lease_session() override { close(); }

  result<void> start() {
    return link_.start([&](conn& c) { return db_.open_session(c, info_); },
                       [this](conn& c) { return db_.idle_fine(c); });
  }

  void on_expired() noexcept override { link_.on_expired(); }
  std::string end_reason() const override { return link_.end_reason(); }

  void set_event_handler(std::function<void(session_event)> handler) override {
    link_.set_event_handler(std::move(handler));
  }

  capabilities caps() const noexcept override { return Db::caps(); }

  result<queue_view> enqueue(std::string_view lock, entry_kind kind, std::string_view id) override {
    auto sent = steady::now();
    auto r = run(db_.enqueue(info_.id, lock, id, kind), true);
    if (!r) return fail(r.error());
    {
      std::lock_guard lk(own_mu_);
      own_.insert_or_assign(std::string(id), std::string(lock));
    }
    return queue(*r, sent);
  }

  // A caller that gives up at a deadline (a timed waiter, `dlock run`'s look at the holder)
  // reads on the session's second connection, cut off then (session_conn::run_aside).
  result<queue_view> list(std::string_view lock) override {
    auto sent = steady::now();
    auto q = db_.list(lock, info_.id);
    auto r = caller_request_deadline && *caller_request_deadline != steady::time_point::max()
                 ? link_.run_aside(*caller_request_deadline,
                                   [&](conn& c, bool lost) {
                                     if (lost) q.params[1] = std::string();
                                     return c.run(q.sql, q.params);
                                   })
                 : run(std::move(q), false, 1);
    if (!r) return fail(r.error());
    return queue(*r, sent);
  }

  // Only this session's live entry, on the session's own connection: a session whose
  // connection ended has ended, and its leader must not speak.
  result<std::uint64_t> set_value(std::string_view lock, std::string_view id,
                                  std::string_view value) override {
    if (link_.expired()) return gone(lock, id, "the session expired");
    auto r = run(db_.set_value(lock, id, info_.id, value), true);
    if (!r) {
      if (r.error().code == make_error_code(errc::session_expired)) {
        return fail(errc::lock_lost, r.error().message);
      }
      return fail(r.error());
    }
    auto version = Db::version_set(*r);
    if (!version) return gone(lock, id, "lease ended");
    return *version;
  }

  result<void> remove(std::string_view lock, std::string_view id) override {
    {
      std::lock_guard lk(own_mu_);  // no longer the renewal's to check, from now on
      if (auto it = own_.find(id); it != own_.end()) own_.erase(it);
    }
    // Rows of a lapsed lease are dead to every other client: not ours any more, and not worth
    // a request (nor a new connection from a remover thread that the host's exit could tear
    // OpenSSL down under: a fault-run worker crashed so).
    // session_expired, not lock_lost: nothing was confirmed by the server. A retried removal
    // stopped so is an unconfirmed release (removal_queue); as lock_lost it read as "gone, so
    // our earlier attempt removed it", and unlock() reported success for a release whose
    // connection a proxy had cut before the DELETE was sent (a tester's).
    if (link_.expired()) {
      return fail(errc::session_expired, std::string(Db::name) + " entry " + std::string(id) +
                                             " of '" + std::string(lock) +
                                             "' is dead (the session expired)");
    }
    auto r = run(db_.remove(lock, id, info_.id));
    if (!r) return fail(r.error());
    if (!Db::removed(*r)) return gone(lock, id, "lease ended");
    return {};
  }

  result<void> wait(std::string_view lock, const entry& awaited, steady::time_point deadline,
                    std::stop_token stop) override {
    return wait_any(lock, std::span<const entry>(&awaited, 1), deadline, std::move(stop));
  }

  // A timed waiter's reads after a wake-up, or after its deadline, run on the session's
  // second connection (list): it is opened as the wait begins, not at the first such read.
  result<void> wait_any(std::string_view lock, std::span<const entry> awaited,
                        steady::time_point deadline, std::stop_token stop) override {
    link_.warm_aside(deadline);
    return db_.wait_any(*this, lock, awaited, deadline, std::move(stop));
  }

  result<void> wait_change(std::string_view lock, const queue_view& seen,
                           steady::time_point deadline, std::stop_token stop) override {
    link_.warm_aside(deadline);
    return db_.wait_change(*this, lock, seen, deadline, std::move(stop));
  }

  // The backend's own, where it can tell that the awaited entry left (MySQL's doorbells).
  result<awaited_fate> wait_knowing(std::string_view lock, const entry& awaited,
                                    steady::time_point deadline, std::stop_token stop) override {
    link_.warm_aside(deadline);
    if constexpr (requires { db_.wait_knowing(*this, lock, awaited, deadline, stop); }) {
      return db_.wait_knowing(*this, lock, awaited, deadline, std::move(stop));
    } else {
      auto r = wait(lock, awaited, deadline, std::move(stop));
      if (!r) return fail(r.error());
      return awaited_fate::unknown;
    }
  }

  result<steady::time_point> keep_alive() override {
    auto sent = steady::now();
    auto r = run(db_.keep_alive(info_.id, info_.ttl), true);
    if (!r) return fail(r.error());
    if (!Db::renewed(*r)) {
      return fail(errc::session_expired, link_.where() + ": session " + info_.id +
                                             " expired (lease lapsed or its connection ended)");
    }
    if constexpr (requires(conn & c) { db_.tidy(c, info_.id, info_.ttl); }) {
      // Housekeeping after the renewal (MySQL: released entries' rows); it fails harmlessly.
      (void)link_.run(
          true, [&](conn& c, bool) { return db_.tidy(c, info_.id, entries_check_budget(info_)); });
    }
    // A lost connection ends the session through the check's bound request.
    if (auto kept = entries_check_verdict(own_entries_kept()); !kept) return fail(kept.error());
    return sent;
  }

  void close() noexcept override {
    db_.close_wakes();
    link_.close([&](conn& c) {
      for (auto& q : db_.goodbye(info_.id)) {
        if (!c.run(q.sql, q.params)) return false;
      }
      return true;
    });
  }

  // What this session's own close runs, for another session: its waiters notice at their next
  // check of the holder's session.
  result<void> end_session(std::string_view session_id) override {
    for (auto& q : db_.end_session(std::string(session_id))) {
      if (auto r = run(std::move(q)); !r) return fail(r.error());
    }
    return {};
  }

  result<std::vector<check_finding>> diagnose() override {
    return link_.run(false, [&](conn& c, bool) { return db_.findings(c); });
  }

  result<std::vector<std::string>> lock_names(std::string_view prefix) override {
    auto r = run(db_.lock_names(prefix));
    if (!r) return fail(r.error());
    std::vector<std::string> out;
    for (std::size_t i = 0, n = Db::count(*r); i < n; ++i) out.push_back(r->text(i, 0));
    return out;
  }

  const std::string& session_id() const noexcept { return info_.id; }

  // Runs one request on the session's connection (see session_conn::run for `bound`). `self`
  // (a listing only): the index of the parameter naming this session, whose entries the
  // server then skips checking; blanked when the session's connection is gone.
  result<rows> run(const statement& s, std::vector<param> params, bool bound = false,
                   int self = -1) {
    return link_.run(bound, [&](conn& c, bool lost) {
      if (self >= 0 && lost) params[static_cast<std::size_t>(self)] = std::string();
      return c.run(s, params);
    });
  }
  result<rows> run(typename Db::request q, bool bound = false, int self = -1) {
    return run(q.sql, std::move(q.params), bound, self);
  }

 private:
  queue_view queue(const rows& r, steady::time_point sent) const {
    auto v = rows_to_queue(r, Db::count(r), sent, true);
    Db::read_values(v);
    return v;
  }

  // An entry of this session deleted by anyone else (a DELETE by hand, a clean-up script): the
  // next contender was granted at once, so every hold of the session is in doubt and the
  // session ends, telling its holders within a renewal interval instead of at their release.
  // Entries are snapshot before the look and re-checked after it: one enqueued since was not
  // looked for, one released since was deleted by us.
  result<void> own_entries_kept() {
    std::vector<std::pair<std::string, std::string>> live;
    {
      std::lock_guard lk(own_mu_);
      if (own_.empty()) return {};
      live.assign(own_.begin(), own_.end());
    }
    // Within its budget: a DBA's lock on the entries table holds the look up, not the
    // renewals after it (sql_faults.a_holder_keeps_its_hold_while_the_entries_table_is_locked).
    auto r = link_.run(true, [&](conn& c, bool) {
      return db_.own_entries(c, info_.id, entries_check_budget(info_));
    });
    if (!r) return fail(r.error());
    std::set<std::string, std::less<>> stored;
    for (std::size_t i = 0, n = Db::count(*r); i < n; ++i) stored.insert(r->text(i, 0));
    std::lock_guard lk(own_mu_);
    for (const auto& [id, lock] : live) {
      if (stored.contains(id) || !own_.contains(id)) continue;
      return fail(errc::session_expired,
                  std::string(Db::name) + " entry " + id + " of '" + lock +
                      "' was deleted by another client, not released by session " + info_.id +
                      ": its lock may have been granted to another, so every hold of this "
                      "session is lost");
    }
    return {};
  }

  static std::unexpected<failure> gone(std::string_view lock, std::string_view id,
                                       std::string_view why) {
    return fail(errc::lock_lost, std::string(Db::name) + " entry " + std::string(id) + " of '" +
                                     std::string(lock) + "' is gone (" + std::string(why) + ")");
  }

  const session_info info_;
  Db db_;
  std::mutex own_mu_;
  std::map<std::string, std::string, std::less<>> own_;  // entry id -> lock, enqueued and not
                                                         // yet released: what renewals check
  session_conn<conn> link_;  // last: its watch stops before the members above go
};

}  // namespace dlock::detail
