#pragma once
// One Redis server as the backend uses it: a pool of connections (so concurrent calls and
// blocked waiters never share one), script calls by SHA with a transparent reload after
// SCRIPT FLUSH or a restart, and the fan-out of one request per server that overlaps the
// round trips of several servers (Redlock) without threads.

#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <stop_token>
#include <string>
#include <vector>

#include "backends/redis/redis_conn.hpp"
#include "backends/redis/redis_scripts.hpp"

namespace dlock::detail::redis {

// A plain command (script == nullptr) or a script call whose argv is numkeys, keys, args.
// With replicas > 0 it counts only once that many replicas acknowledged it: WAIT on the same
// connection, which covers every write the master applied before (its replication stream is
// one sequence), within replica_timeout.
struct request {
  const lua_script* script{nullptr};
  std::vector<std::string> argv;
  int replicas{0};
  std::chrono::milliseconds replica_timeout{};
};

class node {
 public:
  explicit node(target t) : target_(std::move(t)) {}
  node(const node&) = delete;
  node& operator=(const node&) = delete;

  const target& where() const noexcept { return target_; }

  // redis-sentinel://: every new connection asks these sentinels for the master `name`.
  void use_sentinels(std::vector<target> sentinels, std::string name);
  // How many times the master changed under this node (a new replication id at a new
  // connection: a failover, or a master restarted empty), and the current master's address.
  std::uint64_t epoch() const;
  std::string master_address() const;

  // One request, one round trip (plus a script load the first time or after a flush).
  // An error reply becomes a failure. `stop` breaks off a call in flight (its connection is
  // then closed); so does `until` passing (a connection is then opened within what is left,
  // and one whose reply is late is closed, never pooled).
  result<reply_ptr> run(const request& req, std::stop_token stop = {}, until_t until = {});

  // Blocks on BLPOP `key` until a token arrives (its value), `until` passes (nullopt) or
  // `stop` is requested (nullopt; the connection used is then closed). With `keep`, the
  // token stays in the list for every other waiter on it (BLMOVE key key: a rotation).
  // With `alive_key`, a PTTL of it is pipelined behind the pop (no extra round trip: the
  // server runs it as the pop returns) and a token is returned only while that key exists,
  // else "" (a token, but the key was gone when it came).
  result<std::optional<std::string>> pop_wake(const std::string& key,
                                              std::chrono::steady_clock::time_point until,
                                              std::stop_token stop, bool keep = false,
                                              const std::string& alive_key = {});

  // Connections are handed out one per caller and returned when healthy. A new one is
  // opened within what is left until `until`, and given up when `stop` is requested.
  result<std::unique_ptr<connection>> take(until_t until = {}, std::stop_token stop = {});
  void give(std::unique_ptr<connection> c);
  // A pooled connection, or null: never dials.
  std::unique_ptr<connection> take_idle();

 private:
  friend std::vector<result<reply_ptr>> run_all(std::span<node* const>, std::span<const request>,
                                                until_t, std::stop_token);
  result<void> send(connection& c, const request& req, until_t until);
  result<reply_ptr> finish(connection& c, const request& req, reply_ptr r, until_t until);
  // WAIT req.replicas: a failure when fewer acknowledged in time.
  result<void> await_replicas(connection& c, const request& req, until_t until);
  result<std::unique_ptr<connection>> open_master(std::optional<std::chrono::milliseconds> cap,
                                                  std::stop_token stop);
  void forget_connections();

  target target_;
  mutable std::mutex mu_;
  std::vector<target> sentinels_;
  std::string master_name_;
  std::size_t first_sentinel_{0};
  std::string replid_, address_;
  std::uint64_t epoch_{0};
  std::vector<std::unique_ptr<connection>> idle_;
  // Connections used for BLPOP keep their longer socket timeout between waits (two
  // setsockopt calls each saved per wait), so they are pooled apart from the others.
  std::vector<std::unique_ptr<connection>> idle_waiting_;
  std::chrono::steady_clock::time_point down_until_{};
  failure down_failure_;
};

// Runs reqs[i] on nodes[i] for every i, writing every request before reading any reply, so
// N servers cost about one round trip. Each result is independent; a server that has not
// answered by `until` fails (see node::run). `stop` breaks off the calls in flight (their
// connections are then closed), as in node::run.
std::vector<result<reply_ptr>> run_all(std::span<node* const> nodes, std::span<const request> reqs,
                                       until_t until = {}, std::stop_token stop = {});

}  // namespace dlock::detail::redis
