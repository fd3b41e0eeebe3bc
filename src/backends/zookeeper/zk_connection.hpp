#pragma once
// One ZooKeeper handle: one ZooKeeper session, which is the dlock session's lease.
//
// The C client runs its own I/O and completion threads; watchers and completions run on the
// latter and must never block, so this class only records what they report and wakes
// waiters. Session events reach the engine through a thread of our own, because the engine's
// handler may call back into the client (a sync call from the completion thread deadlocks).

#include <zookeeper/zookeeper.h>

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
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
  // How long a request without a deadline of its own waits for its reply (session_options):
  // the client itself waits for a paused server until it gives the connection up, at 2/3 of
  // the session timeout (a tester's leader() took 19.8 s with a 1 s request timeout).
  std::chrono::milliseconds request_timeout{5000};
  std::string credentials;  // "user:password" for the digest scheme, or empty
};

// What await_queue_change() read while it set its watches.
struct watched_queue {
  std::vector<std::string> children;  // of the lock node; none when it does not exist
  std::int32_t head_version{0};       // stat.version of the child its caller picked, if any
};

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
  std::chrono::milliseconds request_timeout() const noexcept { return cfg_.request_timeout; }
  client_identity identity() const { return identity_; }
  const std::string& hosts() const noexcept { return cfg_.hosts; }
  // The session timeout asked for (`session_timeout`, else the TTL).
  std::chrono::milliseconds requested_timeout() const noexcept { return cfg_.session_timeout; }

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

  // Sets a child watch on `lock` and a data watch on its child that `pick` names among the
  // children (none: no data watch), each by the request that reads what it watches
  // (getChildren, getData), so a change after those reads always fires one; with no lock
  // node, an exists watch on it instead. Then asks `unchanged` whether what was read is what
  // its caller saw: if not, returns at once; else blocks until a watch fires, the session
  // ends, `deadline` passes or `stop` is requested.
  result<void> await_queue_change(
      const std::string& lock,
      const std::function<std::optional<std::string>(const std::vector<std::string>&)>& pick,
      const std::function<bool(const watched_queue&)>& unchanged, steady::time_point deadline,
      std::stop_token stop);

  // zoo_delete and zoo_get_children that give up at `deadline` with ZOPERATIONTIMEOUT (the
  // request may still be applied; its late completion only frees what it was given). Return
  // the ZooKeeper code, ZCLOSING once close() began.
  int delete_until(const std::string& path, steady::time_point deadline);
  // getData, getChildren and exists with this connection's node watch on `path` (its event
  // ends await_any_change and await_queue_change), given up like delete_until.
  int watch_data_until(const std::string& path, steady::time_point deadline,
                       struct Stat* st = nullptr);
  int watch_children_until(const std::string& path, steady::time_point deadline,
                           std::vector<std::string>& out);
  int watch_exists_until(const std::string& path, steady::time_point deadline);
  int get_children_until(const std::string& path, steady::time_point deadline,
                         std::vector<std::string>& out);

  // zoo_create2 (ZOO_EPHEMERAL_SEQUENTIAL and the like) that gives up like delete_until;
  // `created` gets the name the server gave, `st` its stat.
  int create_until(const std::string& path, std::string_view data, const ACL_vector* acl, int mode,
                   steady::time_point deadline, std::string& created, struct Stat& st);

  // exists (no watch), and a multi of `check`s that every path is there, given up like
  // delete_until. The check's ZNONODE sets `first_missing` to the first path gone.
  int exists_until(const std::string& path, steady::time_point deadline);
  int check_until(const std::vector<std::string>& paths, steady::time_point deadline,
                  std::size_t& first_missing);

  // zoo_set at `version` (-1: any) that gives up like delete_until; `st` gets the new stat.
  int set_until(const std::string& path, std::string_view data, int version,
                steady::time_point deadline, struct Stat& st);

  // Whether the last request that ended was answered (false: it gave up at its deadline). A
  // server that left one unanswered is not waited for at close (drop_watches).
  void heard_back(bool yes) noexcept { silent_.store(!yes, std::memory_order_relaxed); }

  // Request counting (request_counts): every request this class or its user sends is counted
  // here by kind.
  enum class op : std::size_t { create, get_children, get_data, set_data, remove, exists };
  void sent(op o, std::uint64_t n = 1) noexcept {
    sent_[static_cast<std::size_t>(o)].fetch_add(n, std::memory_order_relaxed);
  }
  request_counts sent_counts() const noexcept;

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
  // Connected to a server (read-only counts): the C client's states, for both files of the class.
  static bool is_connected(int state) {
    return state == ZOO_CONNECTED_STATE || state == ZOO_READONLY_STATE;
  }

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
  // Paths with our data (or exists) watch set on the server and not yet fired (a waiter that
  // gave up leaves one behind until the node changes), and those with our child watch.
  std::set<std::string, std::less<>> armed_;
  std::set<std::string, std::less<>> armed_children_;
  std::deque<session_event> events_;
  std::function<void(session_event)> handler_;

  std::chrono::milliseconds negotiated_{};
  client_identity identity_{};
  std::array<std::atomic<std::uint64_t>, 6> sent_{};
  std::stop_source ended_src_;
  std::atomic<bool> silent_{false};  // see heard_back
  // close() may run on two threads at once (the lease's end, the session's close): one joins,
  // the others wait for it (joining_, joined_), except the event thread itself.
  std::mutex join_mu_;
  std::condition_variable joined_;
  bool joining_{false};
  std::jthread event_thread_;
  std::thread::id event_thread_id_;  // set once, before any close()
};

}  // namespace dlock::detail::zk
