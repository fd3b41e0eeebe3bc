#include "backends/postgres/pg_advisory.hpp"

#include <algorithm>
#include <functional>
#include <optional>
#include <vector>

#include "backends/common/advisory_session.hpp"
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
        listener_(std::move(listen), info_.request_timeout, stmts_) {}
  ~advisory_session() override { close(); }

  result<void> start() {
    std::lock_guard lk(mu_);
    auto c = conn::open(target_, info_.request_timeout);
    if (!c) return fail(c.error());
    conn_ = std::move(*c);
    if (auto r = ensure_schema(*conn_, schema_); !r) return r;
    if (auto r = check_direct(); !r) return r;
    watch_connection([](conn& live) { return live.consume(); });
    return {};
  }

  capabilities caps() const noexcept override { return {reach::network, true, true}; }

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

  void close() noexcept override {
    listener_.close();
    advisory_session_base::close();
  }

 private:
  // Back off no further: a holder that ended without a NOTIFY is noticed this soon.
  static constexpr milliseconds remote_nap{100};

  result<std::optional<std::uint64_t>> try_lock_locked(std::unique_lock<std::mutex>& lk,
                                                       const std::string& key,
                                                       entry_kind kind) override {
    auto r =
        run_locked(kind == entry_kind::shared ? stmts_.adv_try_s : stmts_.adv_try_x, {key}, lk);
    if (!r) return fail(r.error());
    if (r->null(0, 0)) return std::optional<std::uint64_t>{};
    return static_cast<std::uint64_t>(r->i64(0, 0));
  }

  result<void> unlock_locked(std::unique_lock<std::mutex>& lk, const std::string& key,
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

  result<void> mark_locked(std::unique_lock<std::mutex>& lk, const std::string& key,
                           bool waiting) override {
    auto r = run_locked(waiting ? stmts_.adv_mark : stmts_.adv_unmark, {key}, lk);
    if (!r) return fail(r.error());
    return {};
  }

  result<void> ping_locked(std::unique_lock<std::mutex>& lk) override {
    auto r = run_locked(stmts_.ping, {}, lk);
    if (!r) return fail(r.error());
    return {};
  }

  // Woken by the NOTIFY of the other connection's release, or after a nap (a holder whose
  // connection ended releases without one; a release just before the LISTEN, or just before
  // this session's "waiting" mark, went without one or unseen).
  result<void> wait_remote(std::string_view, const entry& awaited, steady::time_point deadline,
                           std::stop_token stop) override {
    auto t = listener_.subscribe(awaited.id);
    if (!t) return fail(t.error());
    auto nap = std::min<steady::time_point>(deadline, steady::now() + remote_nap);
    listener_.wait(*t, nap, std::move(stop));
    listener_.unsubscribe(*t);
    return {};
  }

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
  listener listener_;
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
