#pragma once
// The second connection of a PostgreSQL session: it LISTENs for the removal of the entries
// this session's waiters wait on. Removing an entry fires a trigger that NOTIFYs a channel
// named after that entry only, so a release wakes only the waiters of that entry (O(1)).
// A reader thread (started on first use) polls the socket; waiters sleep on a condition
// variable. The connection opens lazily, so a session that never waits never opens it.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <span>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "backends/postgres/pg_conn.hpp"
#include "backends/postgres/pg_schema.hpp"

namespace dlock::detail::pg {

class listener {
 public:
  listener(target t, std::chrono::milliseconds timeout, statements stmts);
  listener(const listener&) = delete;
  ~listener() { close(); }

  struct ticket {
    std::string id;
    std::uint64_t seen{0};   // notifications on the entry's channel when subscribed
    std::uint64_t epoch{0};  // connection incarnation when subscribed
  };

  // Each request below ends by the request timeout, or by `until` if sooner: a waiter's
  // deadline, which a server that stopped answering must not stretch (a request cut off there
  // closes the connection, as a broken one; every waiter then re-checks).
  using until_t = std::optional<std::chrono::steady_clock::time_point>;

  // LISTENs for the removal of entry `id` (connecting first if needed). Notifications that
  // arrive after this returns are never missed.
  result<ticket> subscribe(const std::string& id, until_t until = std::nullopt);
  struct liveness {
    std::chrono::milliseconds lease;  // left of the entry's session
    bool connected{true};             // its connection (server process) still exists
  };
  // Entry `id`'s session, or nullopt if the entry is gone or its lease lapsed.
  result<std::optional<liveness>> alive(const std::string& id, until_t until = std::nullopt);
  // The same for several entries in one round trip, in the order of `ids`.
  result<std::vector<std::optional<liveness>>> alive_all(const std::vector<std::string>& ids,
                                                         until_t until = std::nullopt);
  // Blocks until the entry's channel is notified, the connection breaks, `until` passes or
  // `stop` is requested; false if only `until` passed.
  bool wait(const ticket& t, std::chrono::steady_clock::time_point until, std::stop_token stop);
  // The same for any of `ts`.
  bool wait_any(std::span<const ticket> ts, std::chrono::steady_clock::time_point until,
                std::stop_token stop);
  void unsubscribe(const ticket& t);
  void close() noexcept;
  // Behind a transaction pooler a LISTEN stays with whichever server process ran it (and its
  // notifications go to whichever client uses that process next): no LISTEN then, and waits
  // end only at their time limit, so waiters poll.
  void set_pooled() {
    std::lock_guard lk(mu_);
    pooled_ = true;
  }

 private:
  struct channel_state {
    std::string channel;
    int refs{0};
    std::uint64_t notified{0};
  };

  result<void> connect_locked(until_t until);
  void after_request_locked();
  void dispatch_locked();
  void wake_reader();
  void read_loop();

  target target_;
  std::chrono::milliseconds timeout_;
  statements stmts_;

  std::mutex mu_;
  std::condition_variable_any cv_;
  std::optional<conn> conn_;
  std::map<std::string, channel_state> by_id_;
  std::map<std::string, std::string> id_by_channel_;
  bool stale_channels_{false};  // LISTENs left over from finished waits
  std::size_t active_{0};       // entries of by_id_ with refs > 0 (waits in progress)
  static constexpr std::size_t max_idle = 256;  // entries of by_id_ kept with refs == 0
  std::uint64_t epoch_{0};
  bool stopping_{false};
  bool pooled_{false};
  // close() breaks off, without mu_ (which a connect or request in flight holds), a connect
  // (closing_) and a request on the connection (its interrupter, kept under interrupt_mu_):
  // a waiter on a paused server was told of close() only at its request timeout.
  std::stop_source closing_;
  std::mutex interrupt_mu_;
  std::shared_ptr<socket_interrupt> interrupter_;
  int wake_fd_{-1};  // eventfd: tells the reader the socket changed or it must stop
  std::thread reader_;
};

}  // namespace dlock::detail::pg
