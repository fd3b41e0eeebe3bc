// The PostgreSQL backend: the SQLite backend's design (pg_schema.hpp) on a server. Lock
// statements run on dlock's own connection, each in its own implicit transaction; a
// connection that broke is replaced on the next call, and the session's lease row outlives
// it, so a dropped connection makes holds suspect (failed renewals) and lost only if the
// lease lapses before a renewal gets through.
#include "backends/postgres/postgres_backend.hpp"

#include <algorithm>
#include <mutex>

#include "backends/common/queue_rows.hpp"
#include "backends/postgres/pg_conn.hpp"
#include "backends/postgres/pg_listener.hpp"
#include "backends/postgres/pg_schema.hpp"

namespace dlock::detail {
namespace {

using std::chrono::milliseconds;

class postgres_session final : public backend_session {
 public:
  postgres_session(pg::target t, std::string schema, session_info info)
      : target_(std::move(t)),
        schema_(std::move(schema)),
        stmts_(pg::make_statements(schema_)),
        info_(std::move(info)),
        listener_(target_, info_.request_timeout, stmts_) {}

  ~postgres_session() override { close(); }

  result<void> start() {
    std::lock_guard lk(mu_);
    auto c = connection();
    if (!c) return fail(c.error());
    if (auto r = pg::ensure_schema(**c, schema_); !r) return r;
    auto r =
        (*c)->run(stmts_.open_session, {info_.id, info_.owner, std::to_string(info_.ttl.count())});
    if (!r) return fail(r.error());
    opened_ = true;
    return {};
  }

  capabilities caps() const noexcept override { return {reach::network, true, true}; }

  result<queue_view> enqueue(std::string_view lock, entry_kind kind, std::string_view id) override {
    auto sent = steady::now();
    auto r = run(stmts_.enqueue, {info_.id, std::string(lock), std::string(id),
                                  kind == entry_kind::shared ? "1" : "0"});
    if (!r) return fail(r.error());
    return rows_to_queue(*r, static_cast<std::size_t>(r->count()), sent);
  }

  result<queue_view> list(std::string_view lock) override {
    auto sent = steady::now();
    auto r = run(stmts_.list, {std::string(lock)});
    if (!r) return fail(r.error());
    return rows_to_queue(*r, static_cast<std::size_t>(r->count()), sent);
  }

  result<void> remove(std::string_view lock, std::string_view id) override {
    auto r = run(stmts_.remove, {std::string(lock), std::string(id), info_.id});
    if (!r) return fail(r.error());
    return {};
  }

  result<void> wait(std::string_view, const entry& awaited, steady::time_point deadline,
                    std::stop_token stop) override {
    // Subscribe before checking, so a removal between the two is not missed.
    auto t = listener_.subscribe(awaited.id);
    if (!t) return fail(t.error());
    auto alive = listener_.alive(awaited.id);
    if (alive && *alive) {
      // A crashed holder never NOTIFYs: its entry vanishes when its lease ends, so wake
      // then at the latest (the safety net; a renewed lease just means another wait).
      auto lease_end =
          steady::now() + std::clamp(**alive, milliseconds{1}, max_nap) + milliseconds{5};
      listener_.wait(*t, std::min(deadline, lease_end), std::move(stop));
    }
    listener_.unsubscribe(*t);
    if (!alive) return fail(alive.error());
    return {};
  }

  result<steady::time_point> keep_alive() override {
    auto sent = steady::now();
    auto r = run(stmts_.keep_alive, {info_.id, std::to_string(info_.ttl.count())});
    if (!r) return fail(r.error());
    if (r->affected() == 0) {
      return fail(errc::session_expired,
                  target_.where + ": session " + info_.id + " expired (lease lapsed)");
    }
    return sent;
  }

  void close() noexcept override {
    listener_.close();
    std::lock_guard lk(mu_);
    if (closed_) return;
    closed_ = !opened_;  // nothing was created on the server
    // One attempt, with one reconnect: the lease frees whatever this misses.
    for (int attempt = 0; attempt < 2 && !closed_; ++attempt) {
      auto c = connection();
      if (c && (*c)->run(stmts_.close, {info_.id})) break;
    }
    conn_.reset();
    closed_ = true;
  }

  result<std::vector<std::string>> lock_names(std::string_view prefix) override {
    auto r = run(stmts_.lock_names, {std::string(prefix)});
    if (!r) return fail(r.error());
    std::vector<std::string> out;
    for (int i = 0; i < r->count(); ++i) out.push_back(r->text(i, 0));
    return out;
  }

 private:
  static constexpr milliseconds max_nap{30'000};

  // The connection, reconnected if the last one broke. Caller holds mu_.
  result<pg::conn*> connection() {
    if (closed_) return fail(errc::session_closed, target_.where + ": session closed");
    if (!conn_ || !conn_->usable()) {
      auto c = pg::conn::open(target_, info_.request_timeout);
      if (!c) return fail(c.error());
      conn_ = std::move(*c);
    }
    return &*conn_;
  }

  result<pg::rows> run(const pg::statement& s, const std::vector<std::string>& params) {
    std::lock_guard lk(mu_);
    auto c = connection();
    if (!c) return fail(c.error());
    return (*c)->run(s, params);
  }

  pg::target target_;
  std::string schema_;
  pg::statements stmts_;
  session_info info_;
  pg::listener listener_;
  std::mutex mu_;
  std::optional<pg::conn> conn_;
  bool opened_{false};
  bool closed_{false};
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
  // mode=advisory (pg_advisory_lock / GET_LOCK) is not built: connection-scoped locks
  // break behind transaction-pooling proxies and across replication failover.
  if (auto mode = u.param("mode", "lease"); mode != "lease") {
    return fail(errc::unsupported,
                "URL '" + u.redacted + "': mode '" + mode + "' is not supported (want mode=lease)");
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
  auto s = std::make_unique<postgres_session>(std::move(t), schema, info);
  if (auto r = s->start(); !r) return fail(r.error());
  return s;
}

}  // namespace dlock::detail
