// The PostgreSQL backend: the SQLite backend's design (pg_schema.hpp) on a server. Lock
// statements run on dlock's own connection, each in its own implicit transaction. That
// connection is the session, as a ZooKeeper session or an advisory lock's connection is:
// its session row records the server process, only that process may renew the lease, and
// waiters treat the entries of a session whose process is gone as dead. So a connection the
// server ended (terminated, restarted, noticed dead) frees its locks at once, and its holder
// is told lost as soon as its socket shows the end (conn_watch) or its next request fails;
// the lease stays the backstop for a connection the server has not yet noticed is gone.
#include "backends/postgres/postgres_backend.hpp"

#include <algorithm>
#include <cctype>
#include <functional>
#include <span>
#include <vector>

#include "backends/common/sql_lease_session.hpp"
#include "backends/postgres/pg_advisory.hpp"
#include "backends/postgres/pg_conn.hpp"
#include "backends/postgres/pg_doctor.hpp"
#include "backends/postgres/pg_listener.hpp"
#include "backends/postgres/pg_liveness.hpp"
#include "backends/postgres/pg_schema.hpp"

namespace dlock::detail {
namespace {

using std::chrono::milliseconds;

// PostgreSQL's part of the lease session (sql_lease_session.hpp): its statements
// (pg_schema.hpp), text parameters, hex-encoded values, and waiters woken by NOTIFY
// (pg_listener.hpp).
class pg_lease {
 public:
  using conn = pg::conn;
  using rows = pg::rows;
  using param = std::string;
  using statement = pg::statement;
  struct request {
    const statement& sql;
    std::vector<param> params;
  };
  static constexpr std::string_view name = "postgres";

  pg_lease(const session_info& info, pg::target t, std::string schema)
      : target_(std::move(t)),
        schema_(std::move(schema)),
        stmts_(pg::make_statements(schema_)),
        timeout_(info.request_timeout),
        listener_(target_, info.request_timeout, stmts_) {}

  static capabilities caps() {
    return {.scope = reach::network,
            .push_wakeups = true,
            .durable_tokens = true,
            .ends_other_sessions = true,
            .permits = true,
            .values = true};
  }

  const std::string& where() const { return target_.where; }

  result<conn> connect() {
    auto c = conn::open(target_, timeout_);
    if (c) c->set_unnamed(pooled_);
    return c;
  }
  // libpq waits as this code tells it: the guard itself makes its deadline the backstop.
  result<conn> connect_session() { return connect(); }

  // The schema, then the session row, on the connection that becomes the session.
  result<void> open_session(conn& c, const session_info& info) {
    if (auto r = pg::ensure_schema(c, schema_); !r) return r;
    if (auto r = pg::claim_mode(c, schema_, "lease", !info.observe_only); !r) return r;
    // The session is bound to its server process only where that process is provably this
    // connection's own (the server's peer is our socket): then its end is the session's end.
    // Through anything between (a pooler, a proxy, NAT) only the lease counts. Behind a
    // transaction pooler the statements run in whichever server process the pooler picks, and
    // that choice is not reliably visible at open: a pool that happened to hand us the same
    // process twice once bound a pooled session to one process, and its next statement, run
    // elsewhere, found the session "expired". Detected transaction pooling also sends
    // statements unnamed and polls instead of LISTEN.
    auto route = pg::probe_route(c, target_, timeout_);
    if (!route) return fail(route.error());
    pooled_ = route->pooled;
    direct_ = route->direct;
    if (pooled_) {
      c.set_unnamed(true);
      listener_.set_pooled();
    }
    auto r = c.run(route->direct ? stmts_.open_session : stmts_.open_pooled_session,
                   {info.id, info.owner, std::to_string(info.ttl.count())});
    if (!r) return fail(r.error());
    return {};
  }

  static bool idle_fine(conn& c) { return c.consume(); }

  request enqueue(const std::string& session, std::string_view lock, std::string_view id,
                  entry_kind kind) const {
    return {stmts_.enqueue,
            {session, std::string(lock), std::string(id), kind == entry_kind::shared ? "1" : "0"}};
  }
  request list(std::string_view lock, const std::string& session) const {
    return {stmts_.list, {std::string(lock), session}};
  }
  request set_value(std::string_view lock, std::string_view id, const std::string& session,
                    std::string_view value) const {
    return {stmts_.set_value, {std::string(lock), std::string(id), session, pg::to_hex(value)}};
  }
  request remove(std::string_view lock, std::string_view id, const std::string& session) const {
    return {direct_ ? stmts_.remove_lazy : stmts_.remove,
            {std::string(lock), std::string(id), session}};
  }
  request keep_alive(const std::string& session, milliseconds ttl) const {
    return {direct_ ? stmts_.keep_alive_lazy : stmts_.keep_alive,
            {session, std::to_string(ttl.count())}};
  }
  request lock_names(std::string_view prefix) const {
    return {stmts_.lock_names, {std::string(prefix)}};
  }
  // One round trip: the lock timeout is local to the two statements' implicit transaction. A
  // statement's tables are locked before it runs, so it cannot set its own.
  result<rows> own_entries(conn& c, const std::string& session,
                           std::chrono::milliseconds budget) const {
    if (!std::ranges::all_of(session, [](char ch) { return std::isxdigit((unsigned char)ch); })) {
      return c.run(stmts_.own_entries, {session});  // not a literal we can write safely
    }
    return c.exec(pg::with_schema(
        "SELECT set_config('lock_timeout', '" + std::to_string(budget.count()) +
            "ms', true); SELECT id FROM @S.entries WHERE session = '" + session + "'",
        schema_));
  }
  std::vector<request> goodbye(const std::string& session) const {
    return {{direct_ ? stmts_.close_lazy : stmts_.close, {session}}};
  }
  // This session's own close, for another session: its waiters notice at their next check of
  // the holder's session (at most max_check later).
  std::vector<request> end_session(const std::string& session) const {
    return {{stmts_.close, {session}}};
  }

  static std::size_t count(const rows& r) { return static_cast<std::size_t>(r.count()); }
  // Listed values arrive hex-encoded (queue rows are text).
  static void read_values(queue_view& v) {
    for (auto& e : v.entries) e.value = pg::from_hex(e.value);
  }
  static std::optional<std::uint64_t> version_set(const rows& r) {
    if (r.count() != 1) return std::nullopt;
    return static_cast<std::uint64_t>(r.i64(0, 0));
  }
  static bool removed(const rows& r) { return !(r.count() == 1 && r.i64(0, 0) == 0); }
  static bool renewed(const rows& r) { return r.affected() != 0; }

  void close_wakes() noexcept { listener_.close(); }

  result<std::vector<check_finding>> findings(conn& c) { return pg::findings(c, pooled_, direct_); }

  template <class Session>
  result<void> wait_change(Session& s, std::string_view lock, const queue_view& seen,
                           steady::time_point deadline, std::stop_token stop) {
    // Subscribed before the look, so a change between the two is not missed: a candidate
    // joining or setting its value NOTIFYs the lock's channel, the head leaving its own. A
    // leader whose connection ended NOTIFYs nothing: the next look (a slice later) reaps it.
    std::vector<pg::listener::ticket> tickets;
    std::vector<std::string> ids{"changed:" + std::string(lock)};
    if (!seen.entries.empty()) ids.push_back(seen.entries.front().id);
    result<void> out;
    for (const auto& id : ids) {
      auto t = listener_.subscribe(id, deadline);
      if (!t) {
        out = fail(t.error());
        break;
      }
      tickets.push_back(std::move(*t));
    }
    if (out) {
      auto now = s.list(lock);
      if (!now) {
        out = fail(now.error());
      } else if (same_entries(now->entries, seen.entries)) {
        listener_.wait_any(tickets, std::min(deadline, steady::now() + max_check), stop);
      }
    }
    for (const auto& t : tickets) listener_.unsubscribe(t);
    return out;
  }

  template <class Session>
  result<void> wait_any(Session&, std::string_view, std::span<const entry> awaited,
                        steady::time_point deadline, std::stop_token stop) {
    // Subscribe before checking, so a removal between the two is not missed.
    std::vector<pg::listener::ticket> tickets;
    std::vector<std::string> ids;
    for (const auto& e : awaited) ids.push_back(e.id);
    result<void> out;
    for (const auto& e : awaited) {
      auto t = listener_.subscribe(e.id, deadline);
      if (!t) {
        out = fail(t.error());
        break;
      }
      tickets.push_back(std::move(*t));
    }
    // A holder whose connection ended or who crashed never NOTIFYs: re-check its session
    // with a backoff (its connection may be gone), and wake at its lease's end at the latest.
    // The first check is this waiter's own (after its LISTEN); later ones are shared by the
    // session's waiters (pg_liveness.hpp), an answer at most half a nap old.
    auto nap = first_check;
    live_.track(ids);
    for (int round = 0; out && round < 10'000 && !stop.stop_requested(); ++round) {
      auto now = steady::now();
      auto until = std::min(deadline, now + nap);
      bool gone = false, disconnected = false, at_lease_end = false;
      // One entry (a lock's waiter): as before; several (a semaphore's): one round trip.
      auto lives = round > 0         ? live_.recent(ids, nap / 2, deadline)
                   : ids.size() == 1 ? one_alive(ids.front(), deadline)
                                     : listener_.alive_all(ids, deadline);
      if (!lives) out = fail(lives.error());
      for (std::size_t i = 0; out && i < ids.size(); ++i) {
        const auto& alive = (*lives)[i];
        if (!alive) {
          gone = true;
          break;
        }
        disconnected |= !alive->connected;
        auto lease_end = now + std::clamp(alive->lease, milliseconds{1}, max_nap) + milliseconds{5};
        if (lease_end <= until) {
          until = lease_end;
          at_lease_end = true;
        }
      }
      if (!out || gone) break;
      if (disconnected) {
        // The server ended a holder's connection: it sends the holder its reason before it
        // frees anything, so the holder is being told now. Take over a moment later, so
        // that a holder on a busy host has heard of its loss before this grant.
        listener_.wait_any(tickets, std::min(deadline, steady::now() + takeover_grace), stop);
        break;
      }
      if (listener_.wait_any(tickets, until, stop) || until == deadline || at_lease_end) break;
      nap = std::min(nap * 2, pooled_ ? max_pooled_check : max_check);
    }
    live_.forget(ids);
    for (const auto& t : tickets) listener_.unsubscribe(t);
    return out;
  }

 private:
  result<std::vector<std::optional<pg::listener::liveness>>> one_alive(
      const std::string& id, steady::time_point deadline) {
    auto a = listener_.alive(id, deadline);
    if (!a) return fail(a.error());
    return std::vector<std::optional<pg::listener::liveness>>{std::move(*a)};
  }

  static constexpr milliseconds max_nap{30'000};
  // How soon, and then how often at most, a waiter re-checks that its predecessor's
  // connection still exists.
  static constexpr milliseconds first_check{20};
  static constexpr milliseconds max_check{500};
  // How long a waiter lets the holder of a connection the server ended hear of it first.
  static constexpr milliseconds takeover_grace{30};
  // Behind a transaction pooler no NOTIFY wakes a waiter: it polls, this often at most.
  static constexpr milliseconds max_pooled_check{100};

  pg::target target_;
  std::string schema_;
  pg::statements stmts_;
  milliseconds timeout_;
  pg::listener listener_;
  pg::shared_liveness live_{listener_};
  // Behind a transaction pooler: unnamed statements, no LISTEN. Set while opening, before
  // any spare connection is made.
  bool pooled_{false};
  // The session is bound to its server process (see open_session): then a crash that loses a
  // release or renewal committed lazily (pg_schema.hpp) ends the session too. Otherwise only
  // the lease counts, and every write stays durable.
  bool direct_{false};
};

std::string join_hosts(const url& u, bool ports) {
  std::string out;
  for (std::size_t i = 0; i < u.hosts.size(); ++i) {
    if (i) out += ",";
    out += ports ? (u.hosts[i].port ? std::to_string(u.hosts[i].port) : std::string("5432"))
                 : u.hosts[i].host;
  }
  return out;
}

}  // namespace

result<std::unique_ptr<backend_session>> open_postgres(const url& u, const session_info& info) {
  auto bad = [&](const std::string& what) {
    return fail(errc::invalid_argument, "URL '" + u.redacted + "': " + what);
  };
  auto schema = u.param("schema", "dlock");
  if (!pg::valid_schema_name(schema)) {
    return bad("schema '" + schema + "' must be lower-case letters, digits and '_' (at most 63)");
  }
  // mode=advisory: session-level advisory locks (pg_advisory.hpp, with its caveats).
  auto mode = u.param("mode", "lease");
  if (mode != "lease" && mode != "advisory") {
    return fail(errc::invalid_argument, "URL '" + u.redacted + "': mode '" + mode +
                                            "' is not known (want mode=lease or mode=advisory)");
  }
  std::string db = u.path.size() > 1 ? u.path.substr(1) : std::string{};
  if (db.find('/') != std::string::npos) return bad("want postgres://user:password@host:port/db");
  pg::target t;
  t.where = "postgres " + (u.user.empty() ? "" : u.user + "@") +
            (u.hosts.empty() ? "localhost" : join_hosts(u, false)) +
            (u.hosts.empty() ? "" : ":" + join_hosts(u, true)) + "/" + db;
  auto add = [&](const char* k, std::string v) { t.params.emplace_back(k, std::move(v)); };
  if (!u.hosts.empty()) {
    add("host", join_hosts(u, false));
    add("port", join_hosts(u, true));
  }
  if (!db.empty()) add("dbname", db);
  if (!u.user.empty()) add("user", u.user);
  if (u.has_password) add("password", u.password);
  add("application_name", "dlock");
  add("client_encoding", "UTF8");
  // The server gives up on a statement when the client would have; a lock wait never
  // outlives the request.
  add("options", "-c statement_timeout=" + std::to_string(info.request_timeout.count()));
  for (const char* k : {"sslmode", "sslrootcert", "sslcert", "sslkey", "target_session_attrs"}) {
    if (auto v = u.param(k); !v.empty()) add(k, v);
  }
  // The session's connection waits up to a renewal interval between requests, the LISTEN and
  // spare connections far longer: a role's or database's idle_session_timeout below that
  // would end the session (and every hold) between renewals. The lease, not the connection,
  // bounds how long a dead holder keeps its locks, so no idle limit is needed.
  t.never_idle_out = true;
  if (mode == "advisory") {
    // The session's connection is the lease: the server ends it after a TTL without a
    // statement (renewals are pings every TTL/3), freeing its advisory locks. Its
    // application_name names the session, for administrators (and the tests) to find it.
    auto listen = t;
    t.never_idle_out = false;
    for (auto& [k, v] : t.params) {
      if (k == "options") v += " -c idle_session_timeout=" + std::to_string(info.ttl.count());
      if (k == "application_name") v = "dlock:" + info.id;
    }
    return pg::open_advisory(std::move(t), std::move(listen), schema, info);
  }
  auto s = std::make_unique<sql_lease_session<pg_lease>>(info, std::move(t), schema);
  if (auto r = s->start(); !r) return fail(r.error());
  return s;
}

}  // namespace dlock::detail
