#include "backends/mysql/my_advisory.hpp"

#include <mysqld_error.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <vector>

#include "backends/common/advisory_session.hpp"
#include "backends/common/request_cutter.hpp"
#include "backends/mysql/my_doctor.hpp"
#include "backends/mysql/my_schema.hpp"
#include "core/poll_pacer.hpp"

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
// For status tools: the holder's connection (IS_USED_LOCK, whoever it belongs to), then every
// connection holding its "waiting" mark, with user and client address where PROCESSLIST
// shows them (all connections with the PROCESS privilege, else this user's). Both parameters
// are "<db>:<lock name>".
const std::string observe =
    "SELECT u.id, u.holds, p.USER, p.HOST FROM ("
    " SELECT IS_USED_LOCK(CONCAT('dlock:', k.h)) AS id, 1 AS holds"
    " FROM (SELECT LEFT(SHA2(?, 256), 36) AS h) k"
    " UNION ALL SELECT w.ID, 0 FROM information_schema.PROCESSLIST w,"
    " (SELECT LEFT(SHA2(?, 256), 36) AS h) k"
    " WHERE IS_USED_LOCK(CONCAT('dlockw:', k.h, ':', w.ID)) = w.ID) u"
    " LEFT JOIN information_schema.PROCESSLIST p ON p.ID = u.id"
    " WHERE u.id IS NOT NULL ORDER BY u.holds DESC, u.id";

#undef DLOCK_MARK
#undef DLOCK_HELD

class advisory_session final : public advisory_session_base<conn, std::string, param> {
 public:
  advisory_session(target t, session_info info)
      : advisory_session_base(t.where, t.db, std::move(info), "another connection (named lock)"),
        target_(std::move(t)) {}
  ~advisory_session() override { close(); }

  result<void> start() {
    std::lock_guard lk(mu_);
    auto guarded = target_;
    guarded.read_timeout = request_guard::backstop(info_.request_timeout);
    auto c = conn::open(guarded, info_.request_timeout);
    if (!c) return fail(c.error());
    conn_.emplace(std::move(*c));
    guard_connection();
    auto r =
        conn_->run("SELECT GET_LOCK(?, 0), VERSION(), DATABASE()", {session_lock_name(info_.id)});
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
    // Locks are keyed by the database's name as the server has it: with
    // lower_case_table_names set, /T2_C and /t2_c are one database, and keyed by the URL's
    // spelling two holders of one name were both granted (a tester's report).
    if (r->rows[0][2]) rescope(r->text(0, 2));
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
    if (auto r = claim_mode(*conn_, "advisory", !info_.observe_only); !r) return r;
    watch_connection([](conn& live) { return !live.peer_closed(); });
    return {};
  }

  // GET_LOCK keeps no queue, is exclusive only, and knows a lock's name only by its hash.
  capabilities caps() const noexcept override {
    return {.scope = reach::network,
            .durable_tokens = true,
            .fifo = false,
            .shared_locks = false,
            .lists_names = false,
            .no_permits_because =
                "in mode=advisory the server's lock (GET_LOCK) has one owner "
                "and no queue of entries; the default lease mode (no "
                "?mode) has semaphores",
            .no_values_because =
                "in mode=advisory the server's lock (GET_LOCK) carries no "
                "value; the default lease mode (no ?mode) has elections",
            .no_ending_others_because =
                "in mode=advisory the lock belongs to the server connection that took it: stop "
                "the holder's process, or KILL its connection on the server"};
  }

  // On a connection of its own: this session's connection is watched between requests.
  result<std::vector<check_finding>> diagnose() override {
    auto c = conn::open(target_, info_.request_timeout);
    if (!c) return fail(c.error());
    return findings(*c, /*advisory=*/true);
  }

 private:
  static constexpr std::chrono::microseconds first_pause{1'000};
  static constexpr std::chrono::microseconds max_pause{16'000};
  static constexpr int max_polls = 1'000;  // then the caller asks again anyway

  // Every entry is exclusive (enqueue refuses shared ones), so `kind` is not consulted.
  result<std::optional<std::uint64_t>> try_lock_locked(std::unique_lock<timed_gate>& lk,
                                                       const std::string& key,
                                                       entry_kind) override {
    auto r = run_locked(try_lock, {key}, lk);
    if (!r) return fail(r.error());
    if (r->rows.empty() || !r->rows[0][0]) return std::optional<std::uint64_t>{};
    return static_cast<std::uint64_t>(r->i64(0, 0));
  }

  result<void> unlock_locked(std::unique_lock<timed_gate>& lk, const std::string& key,
                             entry_kind) override {
    auto r = run_locked(unlock, {key}, lk);
    if (!r) return fail(r.error());
    return {};
  }

  result<void> mark_locked(std::unique_lock<timed_gate>& lk, const std::string& key,
                           bool waiting) override {
    auto r = run_locked(waiting ? mark : unmark, {key}, lk);
    if (!r) return fail(r.error());
    return {};
  }

  result<void> ping_locked(std::unique_lock<timed_gate>& lk) override {
    auto r = run_locked(ping, {}, lk);
    if (!r) return fail(r.error());
    return {};
  }

  result<remote_view> observe_locked(std::unique_lock<timed_gate>& lk,
                                     const std::string& key) override {
    return seen(run_locked(observe, {key, key}, lk));
  }

  std::optional<result<remote_view>> observe_aside(const std::string& key,
                                                   steady::time_point until) override {
    auto r = run_aside(observe, {key, key}, until, {});
    if (!r) return std::nullopt;
    return seen(std::move(*r));
  }

  static result<remote_view> seen(reply r) {
    if (!r) return fail(r.error());
    remote_view v;
    for (std::size_t i = 0; i < r->rows.size(); ++i) {
      remote_conn c;
      c.id = r->text(i, 0);
      c.host = r->rows[i][3] ? r->text(i, 3) : "unknown";
      c.description = "connection " + c.id + (r->rows[i][2] ? ", user " + r->text(i, 2) : "");
      (r->i64(i, 1) == 1 ? v.holders : v.waiters).push_back(std::move(c));
    }
    return v;
  }

  // Nothing announces the other connection's release: poll IS_FREE_LOCK, starting fast (a
  // handoff is often quick) and backing off with jitter to a cap, so a long wait costs one
  // query per ~max_pause. The caller retries GET_LOCK once it is free.
  result<void> wait_remote(std::string_view lock, steady::time_point deadline,
                           std::stop_token stop) override {
    poll_pacer pacer{first_pause, max_pause};
    const auto k = key(lock);
    for (int polls = 0; polls < max_polls; ++polls) {
      std::unique_lock lk(mu_);
      auto until = std::min(deadline, steady::now() + pacer.next());
      cv_.wait_until(lk, stop, until, [&] { return lost_ || closed_; });
      if (stop.stop_requested() || lost_ || closed_ || steady::now() >= deadline) break;
      // Only a waiter with a deadline has one to keep: the others poll on the session's
      // connection, as its other requests, and need no second one.
      std::optional<bool> free;
      if (deadline != steady::time_point::max()) {
        lk.unlock();
        free = poll_aside(k, deadline, stop);
        lk.lock();
      }
      if (!free) {
        // No connection of its own to poll on: on the session's, as its other requests.
        auto r = run_locked(is_free, {k}, lk);
        if (!r) return lost_ ? result<void>{} : fail(r.error());
        free = r->rows.empty() || r->i64(0, 0) == 1;
      }
      if (*free) break;
    }
    return {};
  }

  // IS_FREE_LOCK on the session's second connection (run_aside). true also when the poll
  // failed or was cut (the caller asks GET_LOCK again, or finds its deadline passed); nullopt
  // when no such connection could be had.
  std::optional<bool> poll_aside(const std::string& k, steady::time_point deadline,
                                 const std::stop_token& stop) {
    auto r = run_aside(is_free, {k}, deadline, stop);
    if (!r) return std::nullopt;
    if (!*r) return true;
    return (*r)->rows.empty() || (*r)->i64(0, 0) == 1;
  }

  // `s` on a connection kept for the session's requests with a deadline (timed polls, a timed
  // look at a lock), cut off at `deadline` or `stop`: on the session's connection a server
  // that stopped answering would hold the caller for a whole request timeout, and cutting
  // that connection would end the session and free its named locks. A request that could not
  // start, or had no answer, by the deadline fails with backend_unavailable; nullopt when no
  // such connection could be had (max_connections).
  std::optional<reply> run_aside(const std::string& s, const std::vector<param>& params,
                                 steady::time_point deadline, const std::stop_token& stop) {
    auto late = [&] {
      return reply(fail(errc::backend_unavailable,
                        target_.where + ": no answer before the caller's deadline"));
    };
    std::unique_lock lk(poll_mu_, std::defer_lock);
    if (!lk.try_lock_until(deadline)) return late();
    // The server ends it after a TTL idle (its wait_timeout, as the session's).
    if (!poll_conn_ || !poll_conn_->usable() || poll_conn_->peer_closed()) {
      poll_conn_.reset();
      // A refusal (max_connections) is not asked again at every request.
      if (steady::now() < no_poll_conn_until_) return std::nullopt;
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - steady::now());
      if (left.count() <= 0) return late();
      auto c = conn::open(target_, std::min(info_.request_timeout, left));
      if (!c) {
        if (steady::now() >= deadline) return late();  // a server not answering
        no_poll_conn_until_ = steady::now() + std::chrono::seconds{10};
        return std::nullopt;
      }
      poll_conn_ = std::make_unique<conn>(std::move(*c));
    }
    auto cut = poll_conn_->interrupter();
    std::stop_callback on_stop(stop, [&cut] { cut->interrupt(); });
    auto ticket = cutter_.arm(deadline, cut);
    auto r = poll_conn_->run(s, params);
    if (!r || ticket.fired() || stop.stop_requested()) {
      poll_conn_.reset();  // a late answer must not be read as the next request's
      if (r || ticket.fired()) return late();
    }
    return r;
  }

  // Closing the connection frees every named lock at once: unlock_on_close has nothing to do.

  target target_;
  timed_gate poll_mu_;  // one request at a time on poll_conn_
  std::unique_ptr<conn> poll_conn_;
  steady::time_point no_poll_conn_until_{};
  request_cutter cutter_;  // last: its thread ends before poll_conn_ closes
};

}  // namespace

result<std::unique_ptr<backend_session>> open_advisory(target t, const session_info& info) {
  auto s = std::make_unique<advisory_session>(std::move(t), info);
  if (auto r = s->start(); !r) return fail(r.error());
  return s;
}

}  // namespace dlock::detail::my
