#include "backends/zookeeper/zk_connection.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>

#include "backends/zookeeper/zk_config.hpp"
#include "core/open_budget.hpp"
#include "core/thread_room.hpp"

namespace dlock::detail::zk {
namespace {

// The C client logs connection chatter to stderr by default; a library must stay quiet.
void log_sink(const char* message) {
  static const bool debug = std::getenv("DLOCK_ZK_DEBUG") != nullptr;
  if (debug) std::fprintf(stderr, "zookeeper: %s\n", message);
}

constexpr std::chrono::milliseconds resolution_delay{10'000};

}  // namespace

connection::connection(config c) : cfg_(std::move(c)) {}

connection::~connection() { close(); }

result<std::unique_ptr<connection>> connection::open(const config& c) {
  // The C client starts two threads per handle and asserts (SIGABRT) when it cannot; with our
  // event thread, three.
  if (auto r = room_for_threads(3, "zookeeper " + c.hosts); !r) return fail(r.error());
  std::unique_ptr<connection> conn(new connection(c));
  auto* self = conn.get();
  self->event_thread_ = std::jthread([self](std::stop_token st) { self->event_loop(st); });
  self->event_thread_id_ = self->event_thread_.get_id();
  // The C client computes with the timeout in an int (twice it, among others): a tester's
  // --ttl 299h overflowed into a client that hung up before it had a session, and 597h
  // wrapped to a negative ask granted as the minimum. Asked for at most a third of INT_MAX
  // (about 198 h), far above any ensemble's maxSessionTimeout, which clamps it anyway.
  constexpr std::int64_t most = std::numeric_limits<int>::max() / 3;
  zhandle_t* zh =
      zookeeper_init2(c.hosts.c_str(), &connection::session_watcher,
                      static_cast<int>(std::min<std::int64_t>(c.session_timeout.count(), most)),
                      nullptr, self, 0, &log_sink);
  if (zh == nullptr) {
    auto why = unresolved(c.hosts);
    return fail(errc::backend_unavailable,
                "zookeeper " + c.hosts + ": cannot create a client handle (" +
                    (why.empty() ? std::string("bad host list?") : why) + ")");
  }
  // The C client re-resolves every host name each time its I/O thread polls (a netlink query,
  // /etc/hosts and /etc/gai.conf read: 20-odd system calls per wake-up), which made up most of a
  // contended client's CPU. Resolve at most every 10 s while connected, and at once on every
  // reconnect, as Java's client does (it resolves only when it connects).
  zoo_set_servers_resolution_delay(zh, static_cast<int>(resolution_delay.count()));
  {
    std::unique_lock hk(self->handle_mu_);
    self->zh_ = zh;
  }
  // Within session::open, only what is left of its budget.
  auto connect_timeout = connect_bound(c.connect_timeout);
  std::unique_lock lk(self->mu_);
  bool up = self->cv_.wait_for(lk, connect_timeout, [&] {
    return is_connected(self->state_) || self->state_ == ZOO_EXPIRED_SESSION_STATE ||
           self->state_ == ZOO_AUTH_FAILED_STATE;
  });
  bool connected = up && is_connected(self->state_);
  lk.unlock();
  if (!connected) {
    return fail(errc::backend_unavailable, "zookeeper " + c.hosts + ": no session within " +
                                               std::to_string(connect_timeout.count()) + " ms");
  }
  self->negotiated_ = std::chrono::milliseconds{zoo_recv_timeout(zh)};
  if (const clientid_t* id = zoo_client_id(zh)) {
    self->identity_.session_id = id->client_id;
    self->identity_.password.assign(id->passwd, sizeof id->passwd);
  }
  if (!c.credentials.empty()) {
    // Digest auth is resent by the client on every reconnect; wait for the first answer so
    // that the first create already carries the identity.
    struct pending {
      std::mutex m;
      std::condition_variable cv;
      bool done{false};
      int rc{0};
    };
    auto p = std::make_shared<pending>();
    auto* held = new std::shared_ptr<pending>(p);
    int rc = zoo_add_auth(
        zh, "digest", c.credentials.data(), static_cast<int>(c.credentials.size()),
        [](int rc, const void* data) {
          auto* sp = static_cast<std::shared_ptr<pending>*>(const_cast<void*>(data));
          {
            std::lock_guard g((*sp)->m);
            (*sp)->done = true;
            (*sp)->rc = rc;
          }
          (*sp)->cv.notify_all();
          delete sp;
        },
        held);
    if (rc != ZOK) {
      delete held;
      return fail(self->error(rc, "add_auth", "digest"));
    }
    std::unique_lock pl(p->m);
    if (!p->cv.wait_for(pl, c.connect_timeout, [&] { return p->done; })) {
      return fail(errc::backend_unavailable, "zookeeper " + c.hosts + ": no answer to add_auth");
    }
    if (p->rc != ZOK) return fail(self->error(p->rc, "add_auth", "digest"));
  }
  return conn;
}

result<connection::use> connection::acquire() {
  std::shared_lock lk(handle_mu_);
  if (closed_ || zh_ == nullptr) {
    return fail(errc::session_closed, "zookeeper " + cfg_.hosts + ": session closed");
  }
  auto* zh = zh_;
  return use(std::move(lk), zh);
}

failure connection::error(int rc, std::string_view op, std::string_view path) {
  auto where = "zookeeper " + cfg_.hosts + ": " + std::string(op) + " " + std::string(path) + ": ";
  errc code = errc::backend_error;
  std::string what = zerror(rc);
  switch (rc) {
    case ZCONNECTIONLOSS:
    case ZOPERATIONTIMEOUT:
    case ZSESSIONMOVED:
    case ZNOTREADONLY:
      code = errc::backend_unavailable;
      break;
    case ZSESSIONEXPIRED:
      code = errc::session_expired;
      break;
    case ZNOAUTH:
    case ZAUTHFAILED:
      code = errc::permission_denied;
      break;
    case ZCLOSING:
      code = errc::session_closed;
      break;
    case ZINVALIDSTATE: {
      std::lock_guard lk(mu_);
      if (state_ == ZOO_AUTH_FAILED_STATE) {
        code = errc::permission_denied;
        what = "authentication failed";
      } else {
        code = errc::session_expired;
        what = "session expired";
      }
      break;
    }
    default:
      break;
  }
  return {make_error_code(code), where + what};
}

result<void> connection::health() {
  std::lock_guard lk(mu_);
  if (closing_) return fail(errc::session_closed, "zookeeper " + cfg_.hosts + ": session closed");
  if (is_connected(state_)) return {};
  if (state_ == ZOO_EXPIRED_SESSION_STATE) {
    return fail(errc::session_expired, "zookeeper " + cfg_.hosts + ": session expired");
  }
  if (state_ == ZOO_AUTH_FAILED_STATE) {
    return fail(errc::permission_denied, "zookeeper " + cfg_.hosts + ": authentication failed");
  }
  return fail(errc::backend_unavailable, "zookeeper " + cfg_.hosts + ": disconnected");
}

void connection::set_event_handler(std::function<void(session_event)> handler) {
  {
    std::lock_guard lk(mu_);
    handler_ = std::move(handler);
  }
  cv_.notify_all();
}

void connection::session_watcher(zhandle_t*, int type, int state, const char*, void* ctx) {
  if (type == ZOO_SESSION_EVENT) static_cast<connection*>(ctx)->on_session_state(state);
}

void connection::node_watcher(zhandle_t*, int type, int, const char* path, void* ctx) {
  // Session events reach every watcher too; the watch itself survives reconnects (the client
  // re-registers it), so only node events end a wait.
  if (type == ZOO_SESSION_EVENT || path == nullptr) return;
  auto* self = static_cast<connection*>(ctx);
  {
    std::lock_guard lk(self->mu_);
    // A child event ends only the child watch, a data event only the data watch; a deletion
    // (and anything else) ends both.
    if (type != ZOO_CHILD_EVENT) {
      if (auto a = self->armed_.find(std::string_view(path)); a != self->armed_.end()) {
        self->armed_.erase(a);
      }
    }
    if (type != ZOO_CHANGED_EVENT && type != ZOO_CREATED_EVENT) {
      if (auto a = self->armed_children_.find(std::string_view(path));
          a != self->armed_children_.end()) {
        self->armed_children_.erase(a);
      }
    }
    if (auto it = self->watches_.find(std::string_view(path)); it != self->watches_.end()) {
      ++it->second.generation;
      if (type == ZOO_DELETED_EVENT) it->second.deleted = true;
    }
  }
  self->cv_.notify_all();
}

void connection::on_session_state(int state) {
  std::optional<session_event> e;
  {
    std::lock_guard lk(mu_);
    if (ended_) return;
    bool was = is_connected(state_);
    if (is_connected(state)) {
      if (!was && ever_connected_) e = session_event::reconnected;
      ever_connected_ = true;
    } else if (state == ZOO_EXPIRED_SESSION_STATE || state == ZOO_AUTH_FAILED_STATE) {
      e = session_event::expired;
      ended_ = true;
      ended_src_.request_stop();
    } else if (was) {
      e = session_event::suspended;
    }
    state_ = state;
    if (e) events_.push_back(*e);
  }
  cv_.notify_all();
}

void connection::event_loop(std::stop_token stop) {
  std::unique_lock lk(mu_);
  while (!stop.stop_requested()) {
    if (!cv_.wait(lk, stop, [&] { return handler_ && !events_.empty(); })) return;
    auto e = events_.front();
    events_.pop_front();
    auto h = handler_;
    lk.unlock();
    h(e);
    lk.lock();
  }
}

result<bool> connection::await_change(const std::string& path, steady::time_point deadline,
                                      std::stop_token stop) {
  return await_any_change(std::span<const std::string>(&path, 1), deadline, std::move(stop));
}

result<bool> connection::await_any_change(std::span<const std::string> paths,
                                          steady::time_point deadline, std::stop_token stop) {
  using watch_it = decltype(watches_)::iterator;
  std::vector<std::pair<watch_it, std::uint64_t>> mine;  // map iterators stay valid
  std::unique_lock lk(mu_);
  for (const auto& path : paths) {
    auto it = watches_.try_emplace(path).first;
    ++it->second.waiters;
    mine.emplace_back(it, it->second.generation);
    // Before the request: its event may be delivered before the call returns.
    armed_.insert(path);
  }
  lk.unlock();
  int rc = ZOK;
  std::size_t set = 0;
  // Until the caller's deadline: a synchronous call would wait for a server that stopped
  // answering until the client gives up on it (2/3 of the session timeout), past the deadline.
  for (; rc == ZOK && set < paths.size(); ++set) rc = watch_data_until(paths[set], deadline);
  lk.lock();
  if (rc != ZOK) {
    // The failed path and those never asked for carry no watch of ours.
    for (std::size_t i = rc == ZCLOSING ? 0 : set - 1; i < paths.size(); ++i)
      armed_.erase(paths[i]);
  }
  auto changed = [&] {
    for (const auto& [it, generation] : mine) {
      if (it->second.generation != generation) return true;
    }
    return false;
  };
  if (rc == ZOK) cv_.wait_until(lk, stop, deadline, [&] { return changed() || ended_; });
  bool deleted = rc == ZNONODE;
  for (const auto& [it, generation] : mine) {
    if (rc == ZOK && it->second.generation != generation && it->second.deleted) deleted = true;
    if (--it->second.waiters == 0) watches_.erase(it);
  }
  lk.unlock();
  if (rc == ZOK || rc == ZNONODE) return deleted;
  return fail(error(rc, "watch", paths[set == 0 ? 0 : set - 1]));
}

request_counts connection::sent_counts() const noexcept {
  auto n = [&](op o) { return sent_[static_cast<std::size_t>(o)].load(); };
  return {n(op::create),   n(op::get_children), n(op::get_data),
          n(op::set_data), n(op::remove),       n(op::exists)};
}

void connection::end_locally() noexcept {
  {
    std::lock_guard lk(mu_);
    ended_ = true;
  }
  ended_src_.request_stop();
  cv_.notify_all();
}

int connection::ended_rc() {
  std::lock_guard lk(mu_);
  return closing_ ? ZCLOSING : ZSESSIONEXPIRED;
}

}  // namespace dlock::detail::zk
