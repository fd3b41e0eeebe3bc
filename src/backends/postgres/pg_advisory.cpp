#include "backends/postgres/pg_advisory.hpp"

#include <algorithm>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <vector>

#include "backends/common/conn_watch.hpp"
#include "backends/common/loss_notice.hpp"
#include "backends/postgres/pg_listener.hpp"
#include "backends/postgres/pg_schema.hpp"

namespace dlock::detail::pg {
namespace {

using std::chrono::milliseconds;

struct local_entry {
  std::string id;
  entry_kind kind{entry_kind::exclusive};
  std::uint64_t token{0};  // 0 until the server granted it
  std::chrono::system_clock::time_point since;
};

// This session's entries of one lock, in arrival order; only the head asks the server.
struct local_queue {
  std::vector<local_entry> entries;
  bool blocked{false};  // the last try at the head failed: another connection holds it
  bool marked{false};   // this session's "waiting" lock (adv_mark) is held
};

class advisory_session final : public backend_session {
 public:
  advisory_session(target t, target listen, std::string schema, session_info info)
      : target_(std::move(t)),
        schema_(std::move(schema)),
        stmts_(make_statements(schema_)),
        info_(std::move(info)),
        listener_(std::move(listen), info_.request_timeout, stmts_) {}
  ~advisory_session() override { close(); }

  result<void> start() {
    std::lock_guard lk(mu_);
    auto c = conn::open(target_, info_.request_timeout);
    if (!c) return fail(c.error());
    conn_ = std::move(*c);
    if (auto r = ensure_schema(*conn_, schema_); !r) return r;
    watch_.start(
        conn_->socket(),
        [this] {
          std::lock_guard lk(mu_);
          if (!lost_ && !(conn_ && conn_->consume())) mark_lost_locked();
          return !lost_;
        },
        [this] { announce_lost(); });
    return {};
  }

  capabilities caps() const noexcept override { return {reach::network, true, true}; }

  void set_event_handler(std::function<void(session_event)> handler) override {
    loss_.set_handler(std::move(handler));
  }

  result<queue_view> enqueue(std::string_view lock, entry_kind kind, std::string_view id) override {
    std::unique_lock lk(mu_);
    auto& q = queues_[std::string(lock)];
    auto it = std::ranges::find(q.entries, id, &local_entry::id);
    if (it == q.entries.end()) {
      q.entries.push_back({std::string(id), kind, 0, std::chrono::system_clock::now()});
    }
    return advance(lk, std::string(lock));
  }

  result<queue_view> list(std::string_view lock) override {
    std::unique_lock lk(mu_);
    return advance(lk, std::string(lock));
  }

  result<void> remove(std::string_view lock, std::string_view id) override {
    std::unique_lock lk(mu_);
    auto qit = queues_.find(std::string(lock));
    if (qit == queues_.end()) return {};
    auto it = std::ranges::find(qit->second.entries, id, &local_entry::id);
    if (it == qit->second.entries.end()) return {};
    if (it->token != 0 && !lost_) {
      auto r =
          run_locked(it->kind == entry_kind::shared ? stmts_.adv_unlock_s : stmts_.adv_unlock_x,
                     {key(lock)}, lk);
      // A lost connection took its locks with it: gone is success.
      if (!r && !lost_) return fail(r.error());
    }
    qit = queues_.find(std::string(lock));  // the lock may have been let go meanwhile
    if (qit == queues_.end()) return {};
    std::erase_if(qit->second.entries, [&](const auto& e) { return e.id == id; });
    qit->second.blocked = false;
    cv_.notify_all();
    if (auto r = settle_mark(lk, std::string(lock)); !r && !lost_) return r;
    qit = queues_.find(std::string(lock));
    if (qit != queues_.end() && qit->second.entries.empty() && !qit->second.marked) {
      queues_.erase(qit);
    }
    return {};
  }

  result<void> wait(std::string_view lock, const entry& awaited, steady::time_point deadline,
                    std::stop_token stop) override {
    if (awaited.id != blocker_id(lock)) {
      // A local predecessor: woken by its removal (or by anything changing the queue).
      std::unique_lock lk(mu_);
      cv_.wait_until(lk, stop, deadline, [&] {
        auto qit = queues_.find(std::string(lock));
        return lost_ || qit == queues_.end() ||
               std::ranges::find(qit->second.entries, awaited.id, &local_entry::id) ==
                   qit->second.entries.end();
      });
      return {};
    }
    // Another connection holds it: woken by the NOTIFY of its release, or after a nap (a
    // holder whose connection ended releases without one; a release just before the LISTEN,
    // or just before this session's "waiting" mark, went without one or unseen).
    auto t = listener_.subscribe(awaited.id);
    if (!t) return fail(t.error());
    auto nap = std::min<steady::time_point>(deadline, steady::now() + remote_nap);
    listener_.wait(*t, nap, std::move(stop));
    listener_.unsubscribe(*t);
    return {};
  }

  result<steady::time_point> keep_alive() override {
    std::unique_lock lk(mu_);
    auto sent = steady::now();
    if (lost_) return fail(expired());
    auto r = run_locked(stmts_.ping, {}, lk);
    if (lost_) return fail(expired());
    if (!r) return fail(r.error());
    return sent;
  }

  void close() noexcept override {
    listener_.close();
    watch_.stop();
    std::unique_lock lk(mu_);
    if (closed_) return;
    closed_ = true;
    // Closing the connection frees every advisory lock; the unlocks only NOTIFY waiters
    // sooner than their nap would.
    if (conn_ && !lost_) {
      for (auto& [name, q] : queues_) {
        for (auto& e : q.entries) {
          if (e.token == 0 || lost_) continue;
          (void)conn_->run(e.kind == entry_kind::shared ? stmts_.adv_unlock_s : stmts_.adv_unlock_x,
                           {key(name)});
        }
      }
    }
    queues_.clear();
    conn_.reset();
    cv_.notify_all();
  }

  // Advisory locks are stored by hash only: the names this session holds are all it knows.
  result<std::vector<std::string>> lock_names(std::string_view prefix) override {
    std::lock_guard lk(mu_);
    std::vector<std::string> out;
    for (const auto& [name, q] : queues_) {
      bool held = std::ranges::any_of(q.entries, [](const auto& e) { return e.token != 0; });
      if (held && name.starts_with(prefix)) out.push_back(name);
    }
    return out;
  }

 private:
  // Back off no further: a holder that ended without a NOTIFY is noticed this soon.
  static constexpr milliseconds remote_nap{100};

  std::string key(std::string_view lock) const { return schema_ + ":" + std::string(lock); }
  std::string blocker_id(std::string_view lock) const { return "advisory:" + key(lock); }

  failure expired() const {
    return {make_error_code(errc::session_expired),
            target_.where + ": session " + info_.id + " ended with its connection"};
  }

  void mark_lost_locked() {
    lost_ = true;
    if (conn_) conn_->close();
    cv_.notify_all();
  }

  void announce_lost() { loss_.announce(); }

  // Runs `s` on the session's connection (mu_ held via `lk`). A broken connection ends the
  // session: its advisory locks are gone with it, and the engine is told at once.
  result<rows> run_locked(const statement& s, const std::vector<std::string>& params,
                          std::unique_lock<std::mutex>& lk) {
    if (closed_) return fail(errc::session_closed, target_.where + ": session closed");
    if (lost_ || !conn_ || !conn_->usable()) {
      if (!lost_) mark_lost_locked();
      return fail(expired());
    }
    auto r = conn_->run(s, params);
    if (!conn_->usable()) {
      mark_lost_locked();
      lk.unlock();
      announce_lost();
      lk.lock();
      return fail(expired());
    }
    return r;
  }

  // Lets the head of the local queue ask the server, then returns the queue as the engine
  // sees it: held entries with their tokens, a stand-in for the other connection before the
  // first entry it blocks, then this session's waiting entries.
  result<queue_view> advance(std::unique_lock<std::mutex>& lk, const std::string& lock) {
    queue_view v;
    v.sent_at = steady::now();
    if (lost_) return fail(expired());
    auto& q = queues_[lock];
    std::size_t blocked_at = q.entries.size();
    for (std::size_t i = 0; i < q.entries.size(); ++i) {
      auto& e = q.entries[i];
      if (e.token != 0) continue;
      bool eligible =
          e.kind == entry_kind::exclusive
              ? i == 0
              : std::all_of(q.entries.begin(), q.entries.begin() + static_cast<std::ptrdiff_t>(i),
                            [](const auto& p) { return p.kind == entry_kind::shared; });
      if (!eligible) break;
      v.sent_at = steady::now();
      auto r = run_locked(e.kind == entry_kind::shared ? stmts_.adv_try_s : stmts_.adv_try_x,
                          {key(lock)}, lk);
      if (!r) return fail(r.error());
      auto& cur = queues_[lock];  // the lock was released for announce_lost only on failure
      if (r->null(0, 0)) {
        cur.blocked = true;
        blocked_at = i;
        break;
      }
      cur.entries[i].token = static_cast<std::uint64_t>(r->i64(0, 0));
      cur.blocked = false;
    }
    if (auto r = settle_mark(lk, lock); !r) return fail(r.error());
    auto& cur = queues_[lock];
    for (std::size_t i = 0; i < cur.entries.size(); ++i) {
      if (i == blocked_at) {
        entry b;
        b.id = blocker_id(lock);
        b.owner = "another connection (advisory lock)";
        v.entries.push_back(std::move(b));
      }
      const auto& e = cur.entries[i];
      entry out;
      out.id = e.id;
      out.kind = e.kind;
      out.token = e.token;
      out.owner = info_.owner;
      out.since = e.since;
      v.entries.push_back(std::move(out));
    }
    if (cur.entries.empty()) queues_.erase(lock);
    return v;
  }

  // Holds this session's "waiting" mark on the lock exactly while one of its entries waits,
  // so status tools (and the tests) can count waiters, which the server does not queue.
  result<void> settle_mark(std::unique_lock<std::mutex>& lk, const std::string& lock) {
    auto& q = queues_[lock];
    bool waiting = std::ranges::any_of(q.entries, [](const auto& e) { return e.token == 0; });
    if (waiting == q.marked || lost_) return {};
    auto r = run_locked(waiting ? stmts_.adv_mark : stmts_.adv_unmark, {key(lock)}, lk);
    if (!r) return fail(r.error());
    queues_[lock].marked = waiting;
    return {};
  }

  target target_;
  std::string schema_;
  statements stmts_;
  session_info info_;
  listener listener_;
  std::mutex mu_;
  std::condition_variable_any cv_;
  std::optional<conn> conn_;
  std::map<std::string, local_queue> queues_;
  bool closed_{false};
  bool lost_{false};
  loss_notice loss_;
  conn_watch watch_;  // last: stopped before the members it uses go
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
