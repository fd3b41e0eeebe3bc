#include "backends/mysql/my_advisory.hpp"

#include <mysqld_error.h>

#include <algorithm>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <random>
#include <vector>

#include "backends/common/conn_watch.hpp"
#include "backends/common/loss_notice.hpp"
#include "backends/mysql/my_schema.hpp"

namespace dlock::detail::my {
namespace {

// The named lock of "<db>:<lock name>" (the parameter); 6 + 36 characters.
#define DLOCK_HELD "CONCAT('dlock:', LEFT(SHA2(?, 256), 36))"
// This connection's "waiting" mark on it; at most 64 characters with a 20-digit id.
#define DLOCK_MARK "CONCAT('dlockw:', LEFT(SHA2(?, 256), 36), ':', CONNECTION_ID())"

// IF evaluates NEXTVAL only once GET_LOCK granted, so a token is drawn after the previous
// holder's: tokens grow with every grant.
const std::string try_lock =
    "SELECT IF(GET_LOCK(" DLOCK_HELD ", 0) = 1, NEXTVAL(dlock_adv_tokens), NULL)";
const std::string unlock = "SELECT RELEASE_LOCK(" DLOCK_HELD ")";
const std::string is_free = "SELECT IS_FREE_LOCK(" DLOCK_HELD ")";
const std::string mark = "SELECT GET_LOCK(" DLOCK_MARK ", 0)";
const std::string unmark = "SELECT RELEASE_LOCK(" DLOCK_MARK ")";
const std::string ping = "SELECT 1";

#undef DLOCK_MARK
#undef DLOCK_HELD

struct local_entry {
  std::string id;
  std::uint64_t token{0};  // 0 until the server granted it
  std::chrono::system_clock::time_point since;
};

// This session's entries of one lock, in arrival order; only the head asks the server.
struct local_queue {
  std::vector<local_entry> entries;
  bool marked{false};  // this connection's "waiting" mark is held
};

class advisory_session final : public backend_session {
 public:
  advisory_session(target t, session_info info) : target_(std::move(t)), info_(std::move(info)) {}
  ~advisory_session() override { close(); }

  result<void> start() {
    std::lock_guard lk(mu_);
    auto c = conn::open(target_, info_.request_timeout);
    if (!c) return fail(c.error());
    conn_.emplace(std::move(*c));
    auto r = conn_->run("SELECT GET_LOCK(?, 0), VERSION()", {session_lock_name(info_.id)});
    if (!r) return fail(r.error());
    if (r->rows.empty() || r->i64(0, 0) != 1) {
      return fail(errc::backend_error, target_.where + ": session lock of " + info_.id +
                                           " is held by another connection");
    }
    if (r->text(0, 1).find("MariaDB") == std::string::npos) {
      return fail(errc::unsupported, target_.where + ": mode=advisory needs MariaDB >= 10.3 " +
                                         "(its fencing tokens come from a sequence; server " +
                                         r->text(0, 1) + " has none): use mode=lease");
    }
    auto seq = conn_->exec("CREATE SEQUENCE IF NOT EXISTS dlock_adv_tokens");
    if (!seq &&
        seq.error().message.find("(error " + std::to_string(ER_PARSE_ERROR)) != std::string::npos) {
      return fail(errc::unsupported, target_.where + ": mode=advisory needs MariaDB >= 10.3 " +
                                         "(CREATE SEQUENCE was refused: " + seq.error().message +
                                         "): use mode=lease");
    }
    if (!seq) {
      return fail(failure{seq.error().code, seq.error().message + " (creating dlock's sequence)"});
    }
    watch_.start(
        conn_->socket(),
        [this] {
          std::lock_guard lk(mu_);
          if (!lost_ && (!conn_ || conn_->peer_closed())) mark_lost_locked();
          return !lost_;
        },
        [this] { announce_lost(); });
    return {};
  }

  capabilities caps() const noexcept override { return {reach::network, false, true}; }

  void set_event_handler(std::function<void(session_event)> handler) override {
    loss_.set_handler(std::move(handler));
  }

  result<queue_view> enqueue(std::string_view lock, entry_kind kind, std::string_view id) override {
    if (kind == entry_kind::shared) {
      return fail(errc::unsupported,
                  target_.where + ": mode=advisory has no shared locks (GET_LOCK is exclusive " +
                      "only); use mode=lease for a shared_mutex");
    }
    std::unique_lock lk(mu_);
    auto& q = queues_[std::string(lock)];
    if (std::ranges::find(q.entries, id, &local_entry::id) == q.entries.end()) {
      q.entries.push_back({std::string(id), 0, std::chrono::system_clock::now()});
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
      auto r = run_locked(unlock, {key(lock)}, lk);
      // A lost connection took its locks with it: gone is success.
      if (!r && !lost_) return fail(r.error());
    }
    qit = queues_.find(std::string(lock));  // the lock may have been let go meanwhile
    if (qit == queues_.end()) return {};
    std::erase_if(qit->second.entries, [&](const auto& e) { return e.id == id; });
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
    std::unique_lock lk(mu_);
    if (awaited.id != blocker_id(lock)) {
      // A local predecessor: woken by its removal (or by anything changing the queue).
      cv_.wait_until(lk, stop, deadline, [&] {
        auto qit = queues_.find(std::string(lock));
        return lost_ || qit == queues_.end() ||
               std::ranges::find(qit->second.entries, awaited.id, &local_entry::id) ==
                   qit->second.entries.end();
      });
      return {};
    }
    // Another connection holds it and nothing announces its release: poll IS_FREE_LOCK,
    // starting fast (a handoff is often quick) and backing off with jitter to a cap, so a long
    // wait costs one query per ~max_pause. The caller retries GET_LOCK once it is free.
    thread_local std::minstd_rand rng{std::random_device{}()};
    auto pause = first_pause;
    for (int polls = 0; polls < max_polls && !stop.stop_requested() && !lost_; ++polls) {
      auto nap = std::chrono::microseconds{
          std::uniform_int_distribution<long long>(pause.count() / 2, pause.count())(rng)};
      auto until = std::min(deadline, steady::now() + nap);
      cv_.wait_until(lk, stop, until, [&] { return lost_ || closed_; });
      if (stop.stop_requested() || lost_ || closed_ || steady::now() >= deadline) break;
      auto r = run_locked(is_free, {key(lock)}, lk);
      if (!r) return lost_ ? result<void>{} : fail(r.error());
      if (r->rows.empty() || r->i64(0, 0) == 1) break;
      pause = std::min(pause * 2, max_pause);
    }
    return {};
  }

  result<steady::time_point> keep_alive() override {
    std::unique_lock lk(mu_);
    auto sent = steady::now();
    if (lost_) return fail(expired());
    auto r = run_locked(ping, {}, lk);
    if (lost_) return fail(expired());
    if (!r) return fail(r.error());
    return sent;
  }

  void close() noexcept override {
    watch_.stop();
    std::unique_lock lk(mu_);
    if (closed_) return;
    closed_ = true;
    // Closing the connection frees every named lock at once; nothing to undo first.
    queues_.clear();
    conn_.reset();
    cv_.notify_all();
  }

  // Named locks are stored by hash only: the names this session holds are all it knows.
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
  static constexpr std::chrono::microseconds first_pause{1'000};
  static constexpr std::chrono::microseconds max_pause{16'000};
  static constexpr int max_polls = 1'000;  // then the caller asks again anyway

  std::string key(std::string_view lock) const { return target_.db + ":" + std::string(lock); }
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

  // Runs `sql` on the session's connection (mu_ held via `lk`). A broken connection ends the
  // session: its named locks are gone with it, and the engine is told at once.
  result<outcome> run_locked(const std::string& sql, const std::vector<param>& params,
                             std::unique_lock<std::mutex>& lk) {
    if (closed_) return fail(errc::session_closed, target_.where + ": session closed");
    if (lost_ || !conn_ || !conn_->usable()) {
      if (!lost_) mark_lost_locked();
      return fail(expired());
    }
    auto r = conn_->run(sql, params);
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
  // sees it: the held entry with its token, or a stand-in for the other connection before
  // this session's first waiting entry, then the rest.
  result<queue_view> advance(std::unique_lock<std::mutex>& lk, const std::string& lock) {
    queue_view v;
    v.sent_at = steady::now();
    if (lost_) return fail(expired());
    auto& q = queues_[lock];
    std::size_t blocked_at = q.entries.size();
    if (!q.entries.empty() && q.entries[0].token == 0) {
      v.sent_at = steady::now();
      auto r = run_locked(try_lock, {key(lock)}, lk);
      if (!r) return fail(r.error());
      auto& cur = queues_[lock];
      if (r->rows.empty() || !r->rows[0][0]) {
        blocked_at = 0;
      } else if (!cur.entries.empty()) {
        cur.entries[0].token = static_cast<std::uint64_t>(r->i64(0, 0));
      }
    }
    if (auto r = settle_mark(lk, lock); !r) return fail(r.error());
    auto& cur = queues_[lock];
    for (std::size_t i = 0; i < cur.entries.size(); ++i) {
      if (i == blocked_at) {
        entry b;
        b.id = blocker_id(lock);
        b.owner = "another connection (named lock)";
        v.entries.push_back(std::move(b));
      }
      const auto& e = cur.entries[i];
      entry out;
      out.id = e.id;
      out.kind = entry_kind::exclusive;
      out.token = e.token;
      out.owner = info_.owner;
      out.since = e.since;
      v.entries.push_back(std::move(out));
    }
    if (cur.entries.empty() && !cur.marked) queues_.erase(lock);
    return v;
  }

  // Holds this connection's "waiting" mark exactly while one of its entries waits, so status
  // tools (and the tests) can count waiters, which the server does not queue.
  result<void> settle_mark(std::unique_lock<std::mutex>& lk, const std::string& lock) {
    auto& q = queues_[lock];
    bool waiting = std::ranges::any_of(q.entries, [](const auto& e) { return e.token == 0; });
    if (waiting == q.marked || lost_) return {};
    auto r = run_locked(waiting ? mark : unmark, {key(lock)}, lk);
    if (!r) return fail(r.error());
    queues_[lock].marked = waiting;
    return {};
  }

  target target_;
  session_info info_;
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

result<std::unique_ptr<backend_session>> open_advisory(target t, const session_info& info) {
  auto s = std::make_unique<advisory_session>(std::move(t), info);
  if (auto r = s->start(); !r) return fail(r.error());
  return s;
}

}  // namespace dlock::detail::my
