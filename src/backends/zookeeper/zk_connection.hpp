#pragma once
// One ZooKeeper handle: one ZooKeeper session, which is the dlock session's lease.
//
// The C client runs its own I/O and completion threads; watchers and completions run on the
// latter and must never block, so this class only records what they report and wakes
// waiters. Session events reach the engine through a thread of our own, because the engine's
// handler may call back into the client (a sync call from the completion thread deadlocks).

#include <zookeeper/zookeeper.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <shared_mutex>
#include <span>
#include <stop_token>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "backends/zookeeper/zk_backend.hpp"
#include "core/backend.hpp"

namespace dlock::detail::zk {

struct config {
  std::string hosts;  // "host1:2181,host2:2181", as zookeeper_init takes it
  std::chrono::milliseconds session_timeout{};
  std::chrono::milliseconds connect_timeout{};
  std::string credentials;  // "user:password" for the digest scheme, or empty
};

// Node watch notifications delivered in this process (a test hook's counter).
std::uint64_t node_event_count();

class connection {
 public:
  // Connects and waits (up to connect_timeout) until the session is established.
  static result<std::unique_ptr<connection>> open(const config& c);
  ~connection();
  connection(const connection&) = delete;
  connection& operator=(const connection&) = delete;

  // A use of the handle; close() waits until every use has ended. Never hold one while
  // waiting for a watch.
  class use {
   public:
    zhandle_t* zh() const noexcept { return zh_; }

   private:
    friend class connection;
    use(std::shared_lock<std::shared_mutex> lk, zhandle_t* zh) : lk_(std::move(lk)), zh_(zh) {}
    std::shared_lock<std::shared_mutex> lk_;
    zhandle_t* zh_;
  };
  // session_closed once close() began.
  result<use> acquire();

  // A ZooKeeper return code as a dlock failure naming the servers, the request and the path.
  failure error(int rc, std::string_view op, std::string_view path);

  // Lease state for keep_alive: connected, reconnecting (backend_unavailable), expired.
  result<void> health();

  std::chrono::milliseconds negotiated_timeout() const noexcept { return negotiated_; }
  client_identity identity() const { return identity_; }
  const std::string& hosts() const noexcept { return cfg_.hosts; }

  void set_event_handler(std::function<void(session_event)> handler);

  // Sets a data watch on `path` and blocks until the node is deleted or changed, the session
  // ends, `deadline` passes or `stop` is requested. A node already gone returns at once.
  // True when the node is known to be deleted (sequential names are never reused, so a
  // deleted entry node never comes back).
  result<bool> await_change(const std::string& path, steady::time_point deadline,
                            std::stop_token stop);
  // The same for several nodes at once: returns when any of them changes (true when one is
  // known deleted).
  result<bool> await_any_change(std::span<const std::string> paths, steady::time_point deadline,
                                std::stop_token stop);

  // zoo_delete and zoo_get_children that give up at `deadline` with ZOPERATIONTIMEOUT (the
  // request may still be applied; its late completion only frees what it was given). Return
  // the ZooKeeper code, ZCLOSING once close() began.
  int delete_until(const std::string& path, steady::time_point deadline);
  int get_children_until(const std::string& path, steady::time_point deadline,
                         std::vector<std::string>& out);

  // zoo_create2 (ZOO_EPHEMERAL_SEQUENTIAL and the like) that gives up like delete_until;
  // `created` gets the name the server gave, `st` its stat.
  int create_until(const std::string& path, std::string_view data, const ACL_vector* acl, int mode,
                   steady::time_point deadline, std::string& created, struct Stat& st);

  // The session's lease ended on our side (the engine saw it run out without the server):
  // every wait and request in progress returns at once with ZSESSIONEXPIRED.
  void end_locally() noexcept;
  // Requested once the session ended (expired, locally or by the server, or closing).
  std::stop_token ended() const noexcept { return ended_src_.get_token(); }
  // The code a request cut off by ended() returns: ZCLOSING once close() began, else
  // ZSESSIONEXPIRED.
  int ended_rc();

  // Ends the ZooKeeper session (its ephemeral nodes go with it) and the event thread.
  void close() noexcept;

 private:
  explicit connection(config c);
  static void session_watcher(zhandle_t* zh, int type, int state, const char* path, void* ctx);
  static void node_watcher(zhandle_t* zh, int type, int state, const char* path, void* ctx);
  void on_session_state(int state);
  void push_event(session_event e);
  void event_loop(std::stop_token stop);
  // Removes this session's watches on the server before the handle closes, and waits (a
  // bounded time) until events already sent have been delivered: the C client never frees an
  // event it reads while closing (ZOOKEEPER-3868).
  void drop_watches(zhandle_t* zh) noexcept;

  config cfg_;
  std::shared_mutex handle_mu_;  // shared: a request in flight; unique: close
  zhandle_t* zh_{nullptr};
  bool closed_{false};

  std::mutex mu_;  // everything below
  std::condition_variable_any cv_;
  int state_{0};
  bool ever_connected_{false};
  bool ended_{false};    // expired or closed: waiters return at once
  bool closing_{false};  // close() began
  struct watched {
    std::uint64_t generation{0};
    int waiters{0};
    bool deleted{false};
  };
  std::map<std::string, watched, std::less<>> watches_;
  // Paths with our watch set on the server and not yet fired (a waiter that gave up leaves
  // one behind until the node changes).
  std::set<std::string, std::less<>> armed_;
  std::deque<session_event> events_;
  std::function<void(session_event)> handler_;

  std::chrono::milliseconds negotiated_{};
  client_identity identity_{};
  std::stop_source ended_src_;
  std::jthread event_thread_;
};

}  // namespace dlock::detail::zk
