#pragma once
// The ?mode=advisory sessions of the SQL backends: a database's connection-bound native lock
// (PostgreSQL advisory locks, MariaDB GET_LOCK) presented as the engine's queue of entries.
//
// The server keeps no queue, and its locks are re-entrant within one connection, so two
// entries of one session would both "hold". Each session therefore keeps a local queue per
// lock: only the entries at its head ask the server, the others wait locally for their
// predecessors. The other connection that holds the lock is in no list: the view says where
// it stands (queue_view::unlisted, ahead of the first refused entry), the recipe keeps that
// entry waiting for the queue to change, and wait_change() waits for the server's lock to
// be let go. The connection is the session: its loss is the loss of every lock, announced
// to the engine at once.
//
// A backend supplies the SQL and its wait for another connection through the hooks below
// (each called with mu_ held via `lk`, except wait_remote). Its destructor must call close():
// the hooks are gone by the time this base's destructor runs.

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "backends/common/advisory_view.hpp"
#include "backends/common/conn_end_note.hpp"
#include "backends/common/conn_watch.hpp"
#include "backends/common/loss_notice.hpp"
#include "backends/common/request_guard.hpp"
#include "backends/common/socket_interrupt.hpp"
#include "backends/common/timed_gate.hpp"
#include "core/backend.hpp"
#include "core/caller_deadline.hpp"
#include "core/verdict.hpp"

namespace dlock::detail {

// Conn: a connection with run(const Statement&, const std::vector<Param>&), usable(), close(),
// socket() and guard_requests(request_guard).
template <class Conn, class Statement, class Param>
class advisory_session_base : public backend_session {
 public:
  void on_expired() noexcept override {
    if (interrupt_) interrupt_->interrupt();
  }

  void set_event_handler(std::function<void(session_event)> handler) override {
    loss_.set_handler(std::move(handler));
  }

  result<queue_view> enqueue(std::string_view lock, entry_kind kind, std::string_view id) override {
    std::unique_lock lk(mu_);
    auto& q = queues_[std::string(lock)];
    if (std::ranges::find(q.entries, id, &local_entry::id) == q.entries.end()) {
      q.entries.push_back({std::string(id), kind, 0, std::chrono::system_clock::now()});
    }
    return advance(lk, std::string(lock));
  }

  // With entries of this session on `lock`: its local queue after the server's try-lock
  // (advance), which the engine decides grants from. Without: what the server can tell status
  // tools (observe_locked), never an empty "free" while another connection holds the lock. A
  // caller with a deadline (`dlock run`'s look at the holder) does not wait past it for a
  // request in flight on the session's connection: it observes aside where it can.
  result<queue_view> list(std::string_view lock) override {
    const auto until = caller_request_deadline.value_or(steady::time_point::max());
    std::unique_lock lk(mu_, std::defer_lock);
    if (until == steady::time_point::max()) {
      lk.lock();
    } else if (!lk.try_lock_until(until)) {
      return fail(errc::backend_unavailable,
                  where_ +
                      ": no answer before the caller's deadline (another request of the "
                      "session still waits on the server)");
    }
    auto qit = queues_.find(std::string(lock));
    if (qit != queues_.end() && !qit->second.entries.empty()) {
      return advance(lk, std::string(lock));
    }
    if (lost_) return fail(expired());
    queue_view v;
    v.sent_at = steady::now();
    std::optional<result<remote_view>> aside;
    if (until != steady::time_point::max()) {
      lk.unlock();  // what follows reads no state of the session's
      aside = observe_aside(key(lock), until);
      if (!aside) lk.lock();
    }
    auto seen = aside ? std::move(*aside) : observe_locked(lk, key(lock));
    if (!seen) return fail(seen.error());
    add_observed(v, key(lock), *seen);
    return v;
  }

  // An entry the server did not hold for this connection any more (the connection ended, or
  // the unlock found nothing held) is dropped and reported as errc::lock_lost.
  result<void> remove(std::string_view lock, std::string_view id) override {
    std::unique_lock lk(mu_);
    auto qit = queues_.find(std::string(lock));
    if (qit == queues_.end()) return {};
    auto it = std::ranges::find(qit->second.entries, id, &local_entry::id);
    if (it == qit->second.entries.end()) return {};
    std::optional<failure> gone;
    if (it->token != 0 && lost_) gone = expired();
    if (it->token != 0 && !lost_) {
      auto r = unlock_locked(lk, key(lock), it->kind);
      if (!r && (lost_ || r.error().code == make_error_code(errc::lock_lost))) {
        gone = lost_ ? expired() : r.error();
      } else if (!r) {
        return fail(r.error());
      }
    }
    qit = queues_.find(std::string(lock));  // the lock may have been let go meanwhile
    if (qit != queues_.end()) {
      std::erase_if(qit->second.entries, [&](const auto& e) { return e.id == id; });
      cv_.notify_all();
      if (auto r = settle_mark(lk, std::string(lock)); !r && !lost_) return r;
      qit = queues_.find(std::string(lock));
      if (qit != queues_.end() && qit->second.entries.empty() && !qit->second.marked) {
        queues_.erase(qit);
      }
    }
    if (gone) return fail(errc::lock_lost, gone->message);
    return {};
  }

  // A local predecessor: woken by its removal (or by anything changing the queue).
  result<void> wait(std::string_view lock, const entry& awaited, steady::time_point deadline,
                    std::stop_token stop) override {
    std::unique_lock lk(mu_);
    cv_.wait_until(lk, stop, deadline, [&] {
      auto qit = queues_.find(std::string(lock));
      return lost_ || qit == queues_.end() ||
             std::ranges::find(qit->second.entries, awaited.id, &local_entry::id) ==
                 qit->second.entries.end();
    });
    return {};
  }

  // The recipe waits for a change only behind the other connection's hold (advance).
  result<void> wait_change(std::string_view lock, const queue_view& seen,
                           steady::time_point deadline, std::stop_token stop) override {
    if (seen.unlisted.empty()) {
      return backend_session::wait_change(lock, seen, deadline, std::move(stop));
    }
    return wait_remote(lock, deadline, std::move(stop));
  }

  result<steady::time_point> keep_alive() override {
    std::unique_lock lk(mu_);
    auto sent = steady::now();
    if (lost_) return fail(expired());
    auto r = ping_locked(lk);
    if (lost_) return fail(expired());
    if (!r) return fail(r.error());
    return sent;
  }

  void close() noexcept override {
    watch_.stop();
    // A request in flight (a waiter's poll) on a silent server holds mu_ until its read timeout
    // (4.7 s): cut off, as on_expired does; the connection's end frees the locks as unlocks do.
    std::unique_lock lk(mu_, std::defer_lock);
    if (!lk.try_lock_until(steady::now() + std::chrono::milliseconds{100})) {
      if (interrupt_) interrupt_->interrupt();
      lk.lock();
    }
    if (closed_) return;
    closed_ = true;
    if (conn_ && !lost_) {
      for (auto& [name, q] : queues_) {
        for (auto& e : q.entries) {
          if (e.token != 0) unlock_on_close(key(name), e.kind);
        }
      }
    }
    queues_.clear();
    conn_.reset();
    cv_.notify_all();
  }

  result<std::vector<std::string>> lock_names(std::string_view) override {
    return fail(no_lock_names(where_));
  }

 protected:
  using reply = decltype(std::declval<Conn&>().run(std::declval<const Statement&>(),
                                                   std::declval<const std::vector<Param>&>()));

  // `key_prefix` scopes the server's lock names ("<prefix>:<lock>"); `blocker_owner` is what
  // status tools show for the other connection.
  advisory_session_base(std::string where, std::string key_prefix, session_info info,
                        std::string blocker_owner)
      : info_(std::move(info)),
        where_(std::move(where)),
        key_prefix_(std::move(key_prefix)),
        blocker_owner_(std::move(blocker_owner)) {}

  // What the server tells about `key` (mu_ held via `lk`), for status tools: it keeps no
  // token per connection, and no owner text.
  virtual result<remote_view> observe_locked(std::unique_lock<timed_gate>& lk,
                                             const std::string& key) = 0;
  // The same, on a connection other than the session's, ended by `until`; nullopt where the
  // backend has none (then observe_locked runs). Called without mu_.
  virtual std::optional<result<remote_view>> observe_aside(const std::string& /*key*/,
                                                           steady::time_point /*until*/) {
    return std::nullopt;
  }

  // The fencing token of the server's lock on `key`, or nullopt while another connection
  // holds it.
  virtual result<std::optional<std::uint64_t>> try_lock_locked(std::unique_lock<timed_gate>& lk,
                                                               const std::string& key,
                                                               entry_kind kind) = 0;
  virtual result<void> unlock_locked(std::unique_lock<timed_gate>& lk, const std::string& key,
                                     entry_kind kind) = 0;
  // Takes (`waiting`) or lets go of this session's "waiting" mark on `key`.
  virtual result<void> mark_locked(std::unique_lock<timed_gate>& lk, const std::string& key,
                                   bool waiting) = 0;
  virtual result<void> ping_locked(std::unique_lock<timed_gate>& lk) = 0;
  // Waits until another connection that held `lock` may have let go of it (or `deadline`,
  // `stop`, the session's loss); may return spuriously (the engine asks the server again).
  virtual result<void> wait_remote(std::string_view lock, steady::time_point deadline,
                                   std::stop_token stop) = 0;
  // While closing, with the connection still up. Default: nothing, as its end frees the lock.
  virtual void unlock_on_close(const std::string& /*key*/, entry_kind /*kind*/) {}

  std::string key(std::string_view lock) const { return key_prefix_ + ":" + std::string(lock); }
  // The scope as the server names it, once connected (before any lock is taken): a URL may
  // spell it otherwise (MariaDB with lower_case_table_names folds a database name's case).
  void rescope(std::string key_prefix) { key_prefix_ = std::move(key_prefix); }

  failure expired() const {
    return {make_error_code(errc::session_expired),
            where_ + ": session " + info_.id + " ended with its connection" + ended_.in_parens()};
  }

  // Once the connection is found gone, how it ended, as its client saw it (session_conn's).
  std::string end_reason() const override { return ended_.reason(where_, info_.id); }

  // Right after conn_ connects (its client's own timeout at request_guard::backstop()): a
  // request unanswered for the request timeout fails the open, or ends the session, holds told.
  void guard_connection() {
    conn_->guard_requests({&cutter_, info_.request_timeout, [this] {
                             ended_.cut_here(info_.request_timeout);
                             if (watching_) loss_.announce();
                           }});
  }

  // Watches conn_ (mu_ held) between requests; `alive`: whether the readable connection lives.
  void watch_connection(std::function<bool(Conn&)> alive) {
    watching_ = true;
    interrupt_ = conn_->interrupter();
    watch_.start(
        conn_->socket(),
        [this, alive = std::move(alive)] {
          std::lock_guard lk(mu_);
          if (!lost_ && !(conn_ && alive(*conn_))) mark_lost_locked();
          return !lost_;
        },
        [this] { loss_.announce(); });
  }

  // Runs `s` on the session's connection (mu_ held via `lk`, let go only on a failure returned
  // here). A broken connection ends the session, its locks gone: the engine is told at once.
  reply run_locked(const Statement& s, const std::vector<Param>& params,
                   std::unique_lock<timed_gate>& lk) {
    if (closed_) return fail(errc::session_closed, where_ + ": session closed");
    if (lost_ || !conn_ || !conn_->usable()) {
      if (!lost_) mark_lost_locked();
      return fail(expired());
    }
    auto r = conn_->run(s, params);
    if (!conn_->usable()) {
      mark_lost_locked();
      lk.unlock();
      loss_.announce();
      lk.lock();
      return fail(expired());
    }
    return r;
  }

  session_info info_;
  timed_gate mu_;
  std::condition_variable_any cv_;
  std::optional<Conn> conn_;
  bool closed_{false};
  bool lost_{false};

 private:
  struct local_entry {
    std::string id;
    entry_kind kind{entry_kind::exclusive};
    std::uint64_t token{0};  // 0 until the server granted it
    std::chrono::system_clock::time_point since;
  };

  // This session's entries of one lock, in arrival order; only the head asks the server.
  struct local_queue {
    std::vector<local_entry> entries;
    bool marked{false};  // this session's "waiting" mark is held
  };

  void mark_lost_locked() {
    lost_ = true;
    if (conn_) {
      ended_.keep(*conn_);
      conn_->close();
    }
    cv_.notify_all();
  }

  // Lets the head of the local queue ask the server (a run of shared entries at once), then
  // returns the queue as the engine sees it: this session's entries, held ones with their
  // tokens, and the other connection, unlisted, just ahead of the first entry it blocks.
  result<queue_view> advance(std::unique_lock<timed_gate>& lk, const std::string& lock) {
    queue_view v;
    v.sent_at = steady::now();
    if (lost_) return fail(expired());
    auto& q = queues_[lock];
    std::size_t blocked_at = q.entries.size();
    // Which entries may ask the server is the recipe's decision (verdict.cpp) over this
    // session's own queue: those that would hold if the server had no other connection.
    std::vector<entry> local;
    for (const auto& e : q.entries) {
      entry mine;
      mine.id = e.id;
      mine.kind = e.kind;
      local.push_back(std::move(mine));
    }
    for (std::size_t i = 0; i < q.entries.size(); ++i) {
      auto& e = q.entries[i];
      if (e.token != 0) continue;
      if (!entry_holds(std::span<const entry>(local).first(i + 1), i)) break;
      v.sent_at = steady::now();
      auto r = try_lock_locked(lk, key(lock), e.kind);
      if (!r) return fail(r.error());
      auto& cur = queues_[lock];
      if (!*r) {
        blocked_at = i;
        break;
      }
      cur.entries[i].token = **r;
    }
    if (auto r = settle_mark(lk, lock); !r) return fail(r.error());
    auto& cur = queues_[lock];
    if (blocked_at < cur.entries.size()) {
      // Exclusive: whatever it holds, it refused that entry. Owner text is "host
      // description": the server told this session nothing more.
      v.unlisted.push_back({blocked_at, entry_kind::exclusive, "unknown " + blocker_owner_});
    }
    for (std::size_t i = 0; i < cur.entries.size(); ++i) {
      const auto& e = cur.entries[i];
      entry out;
      out.id = e.id;
      out.kind = e.kind;
      out.token = e.token;
      out.owner = info_.owner;
      out.since = e.since;
      v.entries.push_back(std::move(out));
    }
    if (cur.entries.empty() && !cur.marked) queues_.erase(lock);
    return v;
  }

  // Holds this session's "waiting" mark on the lock exactly while one of its entries waits,
  // so status tools (and the tests) can count waiters, which the server does not queue.
  result<void> settle_mark(std::unique_lock<timed_gate>& lk, const std::string& lock) {
    auto& q = queues_[lock];
    bool waiting = std::ranges::any_of(q.entries, [](const auto& e) { return e.token == 0; });
    if (waiting == q.marked || lost_) return {};
    auto r = mark_locked(lk, key(lock), waiting);
    if (!r) return fail(r.error());
    queues_[lock].marked = waiting;
    return {};
  }

  std::string where_;
  std::string key_prefix_;
  std::string blocker_owner_;
  std::map<std::string, local_queue> queues_;
  loss_notice loss_;
  conn_end_note ended_;  // how the session's connection ended, once it did
  // Breaks off a request in flight on the session's connection once the session expired.
  std::shared_ptr<socket_interrupt> interrupt_;
  std::atomic<bool> watching_{false};  // the session is open: a guard's cut ends it
  request_cutter cutter_;              // its thread ends before conn_ and loss_ go
  conn_watch watch_;                   // last: stopped before the members it uses go
};

}  // namespace dlock::detail
