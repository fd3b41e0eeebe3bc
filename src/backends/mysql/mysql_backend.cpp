// The MySQL/MariaDB backend: the SQLite backend's design (my_schema.hpp) on a server. Lock
// statements run on dlock's own connection, each in its own short transaction. That
// connection is the session (it holds the session's named lock, see my_schema.hpp): when it
// ends, waiters treat the session's entries as dead at once, it can never be renewed, and
// the holder is told lost as soon as its socket shows the end (conn_watch) or its next
// request fails; the lease stays the backstop for a connection the server has not yet
// noticed is gone. MySQL has no LISTEN/NOTIFY: a waiter on one entry blocks on that entry's
// doorbell, a named lock its owner holds until the removal (my_bell.hpp); semaphore waiters
// (n entries), waiters beyond the session's doorbell connections, and election observers (a
// mark of the whole queue) poll, backing off with jitter up to a cap.
#include "backends/mysql/mysql_backend.hpp"

#include <algorithm>
#include <atomic>
#include <bit>
#include <functional>
#include <mutex>
#include <span>
#include <unordered_set>

#include "backends/common/sql_lease_session.hpp"
#include "backends/mysql/my_advisory.hpp"
#include "backends/mysql/my_bell.hpp"
#include "backends/mysql/my_conn.hpp"
#include "backends/mysql/my_doctor.hpp"
#include "backends/mysql/my_route.hpp"
#include "backends/mysql/my_schema.hpp"
#include "backends/mysql/my_window_poll.hpp"
#include "core/duration.hpp"
#include "core/poll_pacer.hpp"
#include "core/url.hpp"

namespace dlock::detail {
namespace {

using std::chrono::milliseconds;
using stmts = my::statements;

// MySQL's part of the lease session (sql_lease_session.hpp): its statements (my_schema.hpp),
// typed parameters, and waiters woken by doorbells (my_bell.hpp) or polling.
class my_lease {
 public:
  using conn = my::conn;
  using rows = my::outcome;
  using param = my::param;
  using statement = std::string;
  struct request {
    const statement& sql;
    std::vector<param> params;
  };
  static constexpr std::string_view name = "mysql";

  my_lease(const session_info& info, my::target t)
      : target_(std::move(t)),
        timeout_(info.request_timeout),
        bells_(target_, info.request_timeout, longest_ring(info), max_bells) {}

  static capabilities caps() {
    return {.scope = reach::network,
            .durable_tokens = true,
            .ends_other_sessions = true,
            .permits = true,
            .values = true};
  }

  const std::string& where() const { return target_.where; }

  result<conn> connect() { return conn::open(target_, timeout_); }
  result<conn> connect_session() {
    auto t = target_;
    t.read_timeout = request_guard::backstop(timeout_);
    return conn::open(t, timeout_);
  }

  result<void> open_session(conn& c, const session_info& info) {
    if (auto r = my::ensure_schema(c); !r) return r;
    // Through a hop the server may free what this connection holds before the client can
    // know (my_route.hpp): then the session is lease-only. A route that cannot be read is
    // taken for a hop: slower releases, never two holders.
    auto direct = my::direct_route(c);
    if (!direct && !c.usable()) return fail(direct.error());
    lease_only_ = !direct || !*direct;
    if (auto r = my::claim_mode(c, "lease", !info.observe_only); !r) return r;
    // Lapsed sessions of crashed clients go first; they can never be renewed.
    if (auto r = c.run(stmts::purge_sessions, {}); !r) return fail(r.error());
    auto taken = c.run(stmts::take_session, {my::session_lock_name(info.id)});
    if (!taken) return fail(taken.error());
    if (taken->rows.empty() || taken->i64(0, 0) != 1) {
      return fail(errc::backend_error, target_.where + ": session lock of " + info.id +
                                           " is held by another connection");
    }
    auto owner = info.owner.substr(0, 1000);
    auto r = c.run(lease_only_ ? stmts::open_lease_only_session : stmts::open_session,
                   {info.id, owner, info.ttl.count()});
    if (!r) return fail(r.error());
    return {};
  }

  static bool idle_fine(conn& c) { return !c.peer_closed(); }

  static request enqueue(const std::string& session, std::string_view lock, std::string_view id,
                         entry_kind kind) {
    return {stmts::enqueue,
            {session, std::string(lock), std::string(id),
             std::int64_t{kind == entry_kind::shared ? 1 : 0}}};
  }
  static request list(std::string_view lock, const std::string& session) {
    return {stmts::list, {std::string(lock), session}};
  }
  static request set_value(std::string_view lock, std::string_view id, const std::string& session,
                           std::string_view value) {
    return {stmts::set_value, {std::string(value), std::string(lock), std::string(id), session}};
  }
  request remove(std::string_view lock, std::string_view id, const std::string& session) const {
    if (lease_only_) return {stmts::remove_row, {std::string(lock), std::string(id), session}};
    return {stmts::remove, {std::string(lock), std::string(id), session, std::string(id)}};
  }
  // Whether this session's route goes through a hop (my_route.hpp): for tests and doctor.
  bool lease_only() const { return lease_only_; }
  static request keep_alive(const std::string& session, milliseconds ttl) {
    return {stmts::keep_alive, {ttl.count(), session}};
  }
  // The statement ends after `budget` even while it waits for a lock on the table (MariaDB's
  // max_statement_time; MySQL's MAX_EXECUTION_TIME, for a SELECT).
  static result<rows> own_entries(conn& c, const std::string& session,
                                  std::chrono::milliseconds budget) {
    return c.run(c.mariadb() ? my::bounded(stmts::own_entries, budget)
                             : "SELECT /*+ MAX_EXECUTION_TIME(" + std::to_string(budget.count()) +
                                   ") */" + stmts::own_entries.substr(6),
                 {session});
  }
  // After each renewal: the rows of entries released since (released by letting their
  // doorbells go, their rows wait), so that a session that stops acquiring leaves none behind
  // for longer than a renewal interval. Not in the renewal's own statement: a lock on the
  // entries table must not hold the renewal up.
  static result<rows> tidy(conn& c, const std::string& session, std::chrono::milliseconds budget) {
    return c.run(c.mariadb() ? my::bounded(stmts::drop_released, budget) : stmts::drop_released,
                 {session});
  }
  static request lock_names(std::string_view prefix) {
    return {stmts::lock_names, {static_cast<std::int64_t>(prefix.size()), std::string(prefix)}};
  }
  static std::vector<request> goodbye(const std::string& session) {
    return {{stmts::close_entries, {session}}, {stmts::close_session, {session}}};
  }
  // What this session's own close runs, for another session (the session row first, so its
  // holder's next renewal fails before its entries go).
  static std::vector<request> end_session(const std::string& session) {
    return {{stmts::close_session, {session}}, {stmts::close_entries, {session}}};
  }

  static std::size_t count(const rows& r) { return r.rows.size(); }
  static void read_values(queue_view&) {}
  static std::optional<std::uint64_t> version_set(const rows& r) {
    if (r.affected == 0) return std::nullopt;
    return r.insert_id;
  }
  static bool removed(const rows& r) { return !r.rows.empty() && r.i64(0, 0) != 0; }
  static bool renewed(const rows& r) { return r.affected != 0; }

  void close_wakes() noexcept { bells_.close(); }

  static result<std::vector<check_finding>> findings(conn& c) { return my::findings(c, false); }

  template <class Session>
  result<void> wait_any(Session& s, std::string_view lock, std::span<const entry> awaited,
                        steady::time_point deadline, std::stop_token stop) {
    if (awaited.size() == 1) {
      auto r = wait_knowing(s, lock, awaited.front(), deadline, std::move(stop));
      if (!r) return fail(r.error());
      return {};
    }
    // A semaphore's waiter: one poll of the session serves all of them.
    std::vector<std::string> ids;
    for (const auto& e : awaited) ids.push_back(e.id);
    auto gone = windows_.wait(
        ids, deadline, stop, [&](const std::vector<std::string>& all) { return alive_of(s, all); });
    if (!gone) return fail(gone.error());
    return {};
  }

  // One entry's doorbell. When it rings, one statement (stmts::fate) says whether the entry
  // left for certain -- it rings (no row of a client that takes no doorbell), and our own
  // session lives (another client may have ended it with its entries: then the engine must
  // list and find ours gone) -- and whether any live entry is still ahead of it: none, and the
  // engine grants from its view without listing the queue (left_head).
  template <class Session>
  result<awaited_fate> wait_knowing(Session& s, std::string_view lock, const entry& awaited,
                                    steady::time_point deadline, std::stop_token stop) {
    switch (ring(s, awaited, deadline, stop)) {
      case rang::no:
        return awaited_fate::unknown;
      case rang::yes: {
        auto r = s.run(stmts::fate, {awaited.id, s.session_id(), std::string(lock),
                                     static_cast<std::int64_t>(awaited.token)});
        if (!r || r->rows.empty() || r->i64(0, 0) != 1 || r->i64(0, 1) != 1)
          return awaited_fate::unknown;
        return r->i64(0, 2) == 1 ? awaited_fate::left_head : awaited_fate::left;
      }
      case rang::cannot:
        break;
    }
    // No doorbell (a lease-only or older owner, or one past its lease): a waiter's pace while
    // a handoff is likely, then a long hold's.
    auto gone = poll_until(deadline, stop,
                           poll_pacer{first_pause, max_pause, max_long_pause, long_hold_after},
                           [&]() -> result<bool> {
                             auto r = s.run(stmts::alive, {awaited.id});
                             if (!r) return fail(r.error());
                             return r->rows.empty();
                           });
    if (!gone) return fail(gone.error());
    return awaited_fate::unknown;
  }

  // Election observers poll the queue's mark (my_schema.cpp, change_mark) against the mark
  // of `seen`: three integers per poll instead of the listing with its values.
  template <class Session>
  result<void> wait_change(Session& s, std::string_view lock, const queue_view& seen,
                           steady::time_point deadline, std::stop_token stop) {
    std::int64_t top = 0, versions = 0;
    for (const auto& e : seen.entries) {
      top = std::max(top, static_cast<std::int64_t>(e.token));
      versions += static_cast<std::int64_t>(e.version);
    }
    const auto count = static_cast<std::int64_t>(seen.entries.size());
    // An observer may watch for hours: its polls back off further than a waiter's.
    return poll_until(deadline, stop, poll_pacer{first_pause, max_observer_pause},
                      [&]() -> result<bool> {
                        auto r = s.run(stmts::change_mark, {std::string(lock)});
                        if (!r) return fail(r.error());
                        return r->rows.empty() || r->i64(0, 0) != count || r->i64(0, 1) != top ||
                               r->i64(0, 2) != versions;
                      });
  }

 private:
  // Doorbell connections a session keeps (each waits for one entry at a time): enough for a
  // process's usual waiters, few enough that many processes do not exhaust the server's
  // max_connections (151 by default); waiters beyond them poll.
  static constexpr std::size_t max_bells = 16;

  // The longest one GET_LOCK blocks (ring() also stops it at the awaited entry's lease, whose
  // owner's connection may live on and keep the doorbell after it lapsed): a network that
  // swallows the answer holds a waiter at most this plus the request timeout past its
  // deadline, and an entry ended by another session (end_session), whose owner keeps the
  // doorbell, is seen within it. An idle waiter costs two statements per this.
  static milliseconds longest_ring(const session_info& info) {
    return std::clamp(info.ttl, milliseconds{1000}, milliseconds{5000});
  }

  enum class rang {
    yes,     // the doorbell was got: its owner let it go, or its connection ended
    no,      // a timeout, a stop, or the entry found gone otherwise: the engine lists
    cannot,  // the caller must poll: no doorbell connection, or this entry's doorbell was got
             // before while the entry stayed listed (its owner takes none: a version-3
             // client, or an owner that outlived its lease)
  };

  // Waits on `awaited`'s doorbell.
  template <class Session>
  rang ring(Session& s, const entry& awaited, steady::time_point deadline,
            const std::stop_token& stop) {
    {
      std::lock_guard lk(rung_mu_);
      if (rung_.contains(awaited.id)) return rang::cannot;
    }
    // Backstop: the owner's lease, as listed (plus the clocks' slack), bounds the wait.
    auto until = deadline;
    if (awaited.lease_left) {
      until = std::min(until, steady::now() + *awaited.lease_left + milliseconds{50});
    }
    poll_pacer pacer{first_slot_pause, max_slot_pause};
    for (;;) {
      switch (bells_.wait(awaited.id, awaited.token, until, stop)) {
        case my::bells::rung::yes: {
          // Next time the same entry is awaited, it outlived its doorbell: poll for it.
          std::lock_guard lk(rung_mu_);
          if (rung_.size() >= 4096) rung_.clear();
          rung_.insert(awaited.id);
          return rang::yes;
        }
        case my::bells::rung::timed_out:
        case my::bells::rung::stopped:
          return rang::no;  // the engine checks the deadline and the stop, and lists again
        case my::bells::rung::no_bell:
          return rang::cannot;
        case my::bells::rung::full:
          break;
      }
      // Every doorbell connection of the session is waiting: wait for one to come back, and
      // look at the entry now and then meanwhile (it may leave out of turn: a cancelled wait).
      if (bells_.wait_slot(awaited.token, std::min(until, steady::now() + pacer.next()), stop)) {
        continue;
      }
      if (stop.stop_requested() || steady::now() >= until) return rang::no;
      auto r = s.run(stmts::alive, {awaited.id});
      if (!r || r->rows.empty()) return rang::no;  // gone (or failing): the engine lists again
    }
  }

  // Polling starts fast (a handoff is often quick) and backs off to a cap, so a long wait
  // costs one query per ~max_pause.
  static constexpr std::chrono::microseconds first_pause{1'000};
  static constexpr std::chrono::microseconds max_pause{16'000};
  static constexpr std::chrono::microseconds max_observer_pause{100'000};
  // Past this, a wait for an entry with no doorbell polls at most every max_long_pause (a
  // tester saw 80 queries a second behind a lease-only holder; now 10-20 after 2 s).
  static constexpr std::chrono::milliseconds long_hold_after{2'000};
  static constexpr std::chrono::microseconds max_long_pause{100'000};
  // A wait with no doorbell connection free looks at its entry from time to time (at least
  // once per max_slot_pause), not at a waiter's pace: it is far from the head.
  static constexpr std::chrono::microseconds first_slot_pause{50'000};
  static constexpr std::chrono::microseconds max_slot_pause{1'000'000};

  // Which of `ids` are alive, a statement per 512. Its list is padded to a power of two (the
  // last id again), so a connection prepares a few statements, not one per length.
  template <class Session>
  static result<my::window_poll::id_set> alive_of(Session& s, const std::vector<std::string>& ids) {
    constexpr std::size_t most = 512;
    my::window_poll::id_set alive;
    for (std::size_t at = 0; at < ids.size(); at += most) {
      const auto n = std::min(most, ids.size() - at);
      const auto slots = std::bit_ceil(std::max<std::size_t>(n, 8));
      std::vector<my::param> params;
      for (std::size_t k = 0; k < slots; ++k) params.emplace_back(ids[at + std::min(k, n - 1)]);
      auto r = s.run(stmts::alive_ids(slots), std::move(params));
      if (!r) return fail(r.error());
      for (std::size_t row = 0; row < r->rows.size(); ++row) alive.insert(r->text(row, 0));
    }
    return alive;
  }

  my::target target_;
  milliseconds timeout_;
  // Set once, by open_session before any request of the session's.
  std::atomic<bool> lease_only_{false};
  my::bells bells_;
  my::window_poll windows_;
  std::mutex rung_mu_;
  std::unordered_set<std::string> rung_;  // entries whose doorbell was got (see ring())
};

}  // namespace

result<std::unique_ptr<backend_session>> open_mysql(const url& u, const session_info& info) {
  auto bad = [&](const std::string& what) {
    return fail(errc::invalid_argument, "URL '" + u.redacted + "': " + what);
  };
  if (u.hosts.size() > 1) return bad("one host only (want mysql://user:password@host:port/db)");
  std::string db = u.path.size() > 1 ? u.path.substr(1) : std::string{};
  if (db.empty() || db.find('/') != std::string::npos) {
    return bad("name a database: mysql://user:password@host:port/db");
  }
  // mode=advisory: named locks (my_advisory.hpp, with its caveats).
  auto mode = u.param("mode", "lease");
  if (mode != "lease" && mode != "advisory") {
    return fail(errc::invalid_argument, "URL '" + u.redacted + "': mode '" + mode +
                                            "' is not known (want mode=lease or mode=advisory)");
  }
  my::target t;
  if (!u.hosts.empty()) {
    t.host = u.hosts[0].host;
    if (u.hosts[0].port) t.port = u.hosts[0].port;
  }
  t.user = u.user;
  t.password = u.password;
  t.has_password = u.has_password;
  t.db = db;
  t.where = "mysql " + (u.user.empty() ? "" : u.user + "@") +
            host_port_text(t.host.empty() ? "localhost" : t.host, t.port) + "/" + db;
  auto ceil_secs = [](milliseconds d) { return std::max<long long>(1, (d.count() + 999) / 1000); };
  auto ttl_text = "ttl=" + format_duration(info.ttl);
  if (mode == "advisory") {
    // The session's connection is the lease: the server ends it after wait_timeout without a
    // statement (renewals are pings every TTL/3), freeing its named locks.
    t.wait_timeout = t.wait_timeout_min = ceil_secs(info.ttl);
    t.exact_wait_timeout = true;
    t.wait_timeout_for =
        "mode=advisory's lease (" + ttl_text + ", the server ends the idle connection)";
    return my::open_advisory(std::move(t), info);
  }
  // Every connection (the session's, a reconnect, the spare one for waiting) goes without a
  // statement for up to a renewal period (under the TTL), and renewals are retried until the
  // lease lapses: a server wait_timeout below that ends the connection, and with it the
  // session, under an idle holder. Twice the TTL leaves a margin; the server's value is kept
  // when higher (a dead client's lease still lapses at the TTL).
  constexpr long long max_wait_timeout = 31'536'000;  // the server's cap: 365 days
  t.wait_timeout = std::min(max_wait_timeout, ceil_secs(info.ttl * 2 + info.request_timeout));
  t.wait_timeout_min = ceil_secs(info.ttl + info.request_timeout);
  t.wait_timeout_for = "the lease's renewals (" + ttl_text + ")";
  auto s = std::make_unique<sql_lease_session<my_lease>>(info, std::move(t));
  if (auto r = s->start(); !r) return fail(r.error());
  return s;
}

}  // namespace dlock::detail
