#include "backends/postgres/pg_advisory.hpp"

#include <algorithm>
#include <functional>
#include <optional>
#include <vector>

#include "backends/common/advisory_session.hpp"
#include "backends/common/aside_conn.hpp"
#include "backends/postgres/pg_doctor.hpp"
#include "backends/postgres/pg_listener.hpp"
#include "backends/postgres/pg_schema.hpp"

namespace dlock::detail::pg {
namespace {

using std::chrono::milliseconds;

class advisory_session final : public advisory_session_base<conn, statement, std::string> {
 public:
  advisory_session(target t, target listen, std::string schema, session_info info)
      : advisory_session_base(t.where, schema, std::move(info),
                              "another connection (advisory lock)"),
        target_(std::move(t)),
        schema_(std::move(schema)),
        stmts_(make_statements(schema_)),
        aside_target_(listen),
        listener_(std::move(listen), info_.request_timeout, stmts_) {}
  ~advisory_session() override { close(); }

  result<void> start() {
    std::lock_guard lk(mu_);
    auto c = conn::open(target_, info_.request_timeout);
    if (!c) return fail(c.error());
    conn_ = std::move(*c);
    guard_connection();
    if (auto r = ensure_schema(*conn_, schema_); !r) return r;
    if (auto r = claim_mode(*conn_, schema_, "advisory", !info_.observe_only); !r) return r;
    if (auto r = check_direct(); !r) return r;
    watch_connection([](conn& live) { return live.consume(); });
    aside_.set_idle_check([](conn& idle) { return idle.consume(); });
    return {};
  }

  // pg_advisory_lock keeps no queue, and the server knows a lock's name only by its hash.
  capabilities caps() const noexcept override {
    return {.scope = reach::network,
            .push_wakeups = true,
            .durable_tokens = true,
            .fifo = false,
            .lists_names = false,
            .no_permits_because =
                "in mode=advisory the server's lock (pg_advisory_lock) has one owner "
                "and no queue of entries; the default lease mode (no "
                "?mode) has semaphores",
            .no_values_because =
                "in mode=advisory the server's lock (pg_advisory_lock) carries no "
                "value; the default lease mode (no ?mode) has elections",
            .no_ending_others_because =
                "in mode=advisory the lock belongs to the server connection that took it: stop "
                "the holder's process, or pg_terminate_backend() its connection on the server"};
  }

  // Advisory locks belong to the server process that took them, and the lease is this
  // session's idle_session_timeout: behind a pooler, a lock taken in one statement is
  // released (or not) in another server process, and the pooler drops the startup option
  // (or another client's session inherits it). Only a direct connection is safe.
  result<void> check_direct() {
    auto pooled = [&](const std::string& seen) {
      return fail(errc::unsupported,
                  target_.where +
                      ": PostgreSQL advisory mode needs a direct connection; this one is pooled (" +
                      seen + "); connect to the server itself, or use the default lease mode");
    };
    auto r = probe_route(*conn_, target_, info_.request_timeout);
    if (!r) return fail(r.error());
    auto want = std::to_string(info_.ttl.count());
    if (r->idle_session_timeout != want) {
      return pooled("the server's idle_session_timeout for it is " +
                    (r->idle_session_timeout.empty() ? std::string("unknown")
                                                     : r->idle_session_timeout + " ms") +
                    ", not the " + want + " ms dlock asked for when connecting");
    }
    if (r->pooled) return pooled(r->seen);
    return {};
  }

  // On a connection of its own: this session's connection is watched between requests. A
  // pooled route was refused at open.
  result<std::vector<check_finding>> diagnose() override {
    auto c = conn::open(target_, info_.request_timeout);
    if (!c) return fail(c.error());
    // Pooled routes were refused at open; a proxy or NAT is not, and is named here.
    auto route = probe_route(*c, target_, info_.request_timeout);
    const bool direct = route && route->direct;
    auto out = findings(*c, false, direct);
    if (!out) return out;
    for (auto& f : *out) {
      if (f.check == "route" && direct) {
        f.reason =
            "one holder at a time: the server's lock belongs to the holder's connection and is "
            "freed the moment it ends";
      } else if (f.check == "route") {
        // The holder is told late, after another may be granted: the loss signal's promise.
        f.guarantee = "loss-signal";
        f.status = check_status::weakened;
        f.reason =
            "the server sees another end of this connection (a proxy or NAT): a hop that closes "
            "only the server's side frees the lock while its holder still believes it holds, "
            "until one of its requests times out; connect directly, use lease mode, or count on "
            "the fencing token";
      } else if (f.check == "synchronous_commit") {
        const char* why =
            "tokens come from nextval(), which does not wait for its WAL: after a server crash "
            "the last ones can be handed out again (a clean restart keeps them; lease mode "
            "survives crashes)";
        f.reason = f.status == check_status::ok ? why : f.reason + "; " + why;
        f.status = check_status::weakened;
      }
    }
    return out;
  }

  void close() noexcept override {
    aside_.close();
    listener_.close();
    advisory_session_base::close();
  }

 private:
  // Back off no further: a holder that ended without a NOTIFY is noticed this soon.
  static constexpr milliseconds remote_nap{100};

  result<std::optional<std::uint64_t>> try_lock_locked(std::unique_lock<timed_gate>& lk,
                                                       const std::string& key,
                                                       entry_kind kind) override {
    auto r =
        run_locked(kind == entry_kind::shared ? stmts_.adv_try_s : stmts_.adv_try_x, {key}, lk);
    if (!r) return fail(r.error());
    if (r->null(0, 0)) return std::optional<std::uint64_t>{};
    return static_cast<std::uint64_t>(r->i64(0, 0));
  }

  result<void> unlock_locked(std::unique_lock<timed_gate>& lk, const std::string& key,
                             entry_kind kind) override {
    auto r = run_locked(unlock_statement(kind), {key}, lk);
    if (!r) return fail(r.error());
    // false: this connection did not hold it (the server already let it go, or the statement
    // ran on a connection other than the one that locked).
    if (r->count() != 1 || r->text(0, 0) != "t") {
      return fail(errc::lock_lost, target_.where + ": advisory lock '" + key +
                                       "' was not held by this session's connection");
    }
    return {};
  }

  result<void> mark_locked(std::unique_lock<timed_gate>& lk, const std::string& key,
                           bool waiting) override {
    auto r = run_locked(waiting ? stmts_.adv_mark : stmts_.adv_unmark, {key}, lk);
    if (!r) return fail(r.error());
    return {};
  }

  result<void> ping_locked(std::unique_lock<timed_gate>& lk) override {
    auto r = run_locked(stmts_.ping, {}, lk);
    if (!r) return fail(r.error());
    return {};
  }

  // For status tools: pg_locks has every connection's advisory locks on this database (the
  // 64-bit key split into classid/objid); pg_stat_activity adds user and client address
  // where this role may see them. Holders (granted on the lock's key), then waiters: dlock
  // sessions holding their shared "waiting" mark, and anyone blocked on the key itself.
  result<remote_view> observe_locked(std::unique_lock<timed_gate>& lk,
                                     const std::string& key) override {
    static const statement observe{
        "dlock_adv_observe",
        "WITH k AS (SELECT hashtextextended($1, 0) AS h, hashtextextended($1, 1) AS w),"
        " l AS (SELECT l.pid, l.granted, l.mode,"
        " (l.classid::int8 << 32 | l.objid::int8) = k.h AS on_lock FROM pg_locks l, k"
        " WHERE l.locktype = 'advisory' AND l.objsubid = 1"
        " AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())"
        " AND (l.classid::int8 << 32 | l.objid::int8) IN (k.h, k.w))"
        " SELECT l.pid, l.on_lock AND l.granted, l.mode = 'ShareLock', host(a.client_addr),"
        " a.client_port, a.usename, a.application_name"
        " FROM l LEFT JOIN pg_stat_activity a ON a.pid = l.pid"
        " WHERE l.on_lock OR (l.granted AND l.mode = 'ShareLock')"
        " ORDER BY 2 DESC, a.backend_start, l.pid"};
    auto r = run_locked(observe, {key}, lk);
    if (!r) return fail(r.error());
    remote_view v;
    for (int i = 0; i < r->count(); ++i) {
      remote_conn c;
      c.id = r->text(i, 0);
      // client_port: -1 over a Unix socket, NULL where this role may not see it.
      c.host = r->null(i, 4)           ? "unknown"
               : r->text(i, 4) == "-1" ? "local"
                                       : r->text(i, 3) + ":" + r->text(i, 4);
      c.description = "backend pid " + c.id;
      if (!r->null(i, 5)) c.description += ", user " + r->text(i, 5);
      if (!r->null(i, 6) && !r->text(i, 6).empty()) {
        c.description += ", application " + r->text(i, 6);
      }
      c.shared = r->text(i, 2) == "t";
      (r->text(i, 1) == "t" ? v.holders : v.waiters).push_back(std::move(c));
    }
    return v;
  }

  // Woken by the NOTIFY of the other connection's release, or after a nap (a holder whose
  // connection ended releases without one; a release just before the LISTEN, or just before
  // this session's "waiting" mark, went without one or unseen).
  // A timed waiter whose nap ends without a NOTIFY asks on a second connection whether the
  // lock is still held before it returns to try it: the try runs on the session's connection,
  // which a server that stopped answering would hold until the session ended with it (a run
  // with `-w` then exited 69, not 75). Cut off at the deadline, as the listener's requests.
  result<void> wait_remote(std::string_view lock, steady::time_point deadline,
                           std::stop_token stop) override {
    auto t = listener_.subscribe(release_channel(lock), deadline);
    if (!t) return fail(t.error());
    const auto k = key(lock);
    for (;;) {
      auto nap = std::min<steady::time_point>(deadline, steady::now() + remote_nap);
      bool notified = listener_.wait(*t, nap, stop);
      if (notified || stop.stop_requested() || steady::now() >= deadline ||
          deadline == steady::time_point::max() || !held_aside(k, deadline)) {
        break;
      }
    }
    listener_.unsubscribe(*t);
    return {};
  }

  // Whether another connection holds `key` exclusively, read on the second connection; false
  // when the read failed or was cut off (the caller then tries, or finds its deadline passed).
  bool held_aside(const std::string& key, steady::time_point deadline) {
    static const statement held{
        "dlock_adv_held",
        "SELECT EXISTS (SELECT 1 FROM pg_locks l WHERE l.locktype = 'advisory'"
        " AND l.objsubid = 1 AND l.granted AND l.mode = 'ExclusiveLock'"
        " AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())"
        " AND (l.classid::int8 << 32 | l.objid::int8) = hashtextextended($1, 0))"};
    bool refused = false;  // no second connection to be had: the caller tries, as before
    auto r = aside_.run(
        deadline, [&](conn& c) { return c.run(held, {key}); }, &refused);
    return r && r->count() == 1 && r->text(0, 0) == "t";
  }

  // What the listener subscribes to for a release of `lock`: a dlock release NOTIFYs
  // channel('advisory:' || key) while a session is marked waiting (pg_schema.cpp,
  // adv_unlock_x/_s). A name on the server that dlock clients of other versions share.
  std::string release_channel(std::string_view lock) const { return "advisory:" + key(lock); }

  // Closing the connection frees every advisory lock; the unlocks only NOTIFY waiters sooner
  // than their nap would.
  void unlock_on_close(const std::string& key, entry_kind kind) override {
    (void)conn_->run(unlock_statement(kind), {key});
  }

  const statement& unlock_statement(entry_kind kind) const {
    return kind == entry_kind::shared ? stmts_.adv_unlock_s : stmts_.adv_unlock_x;
  }

  target target_;
  std::string schema_;
  statements stmts_;
  // As the listener's: named `dlock`, not the session, which is the connection that holds.
  target aside_target_;
  listener listener_;
  aside_conn<conn> aside_{aside_target_.where,
                          [this] { return conn::open(aside_target_, info_.request_timeout); }};
};

}  // namespace

result<std::unique_ptr<backend_session>> open_advisory(target session, target listen,
                                                       std::string schema,
                                                       const session_info& info) {
  auto s = std::make_unique<advisory_session>(std::move(session), std::move(listen),
                                              std::move(schema), info);
  if (auto r = s->start(); !r) return fail(r.error());
  return s;
}

}  // namespace dlock::detail::pg
