#include "zookeeper/zk_env.hpp"

#include <condition_variable>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "backends/zookeeper/zk_names.hpp"
#include "core/session_core.hpp"
#include "support/poll.hpp"

namespace dlock::test {
namespace {

void quiet(const char*) {}

}  // namespace

struct raw_zk::waiter {
  std::mutex m;
  std::condition_variable cv;
  int state{0};
};

namespace {

void on_event(zhandle_t*, int type, int state, const char*, void* ctx) {
  if (type != ZOO_SESSION_EVENT) return;
  auto* w = static_cast<raw_zk::waiter*>(ctx);
  {
    std::lock_guard lk(w->m);
    w->state = state;
  }
  w->cv.notify_all();
}

}  // namespace

zk_server& shared_zk() {
  static zk_server server;
  return server;
}

std::string zk_url(std::chrono::milliseconds session_timeout, const std::string& hosts) {
  return "zk://" + (hosts.empty() ? shared_zk().hosts() : hosts) +
         "/?session_timeout=" + std::to_string(session_timeout.count()) + "ms";
}

raw_zk::raw_zk(const std::string& hosts, const detail::zk::client_identity* identity,
               const std::string& digest) {
  w_ = std::make_unique<waiter>();
  auto* w = w_.get();
  clientid_t id{};
  if (identity) {
    id.client_id = identity->session_id;
    std::copy(identity->password.begin(), identity->password.end(), id.passwd);
  }
  zh_ = zookeeper_init2(hosts.c_str(), &on_event, 10000, identity ? &id : nullptr, w, 0, &quiet);
  if (!zh_) throw std::runtime_error("zookeeper_init failed");
  std::unique_lock lk(w->m);
  if (!w->cv.wait_for(lk, std::chrono::seconds{10},
                      [&] { return w->state == ZOO_CONNECTED_STATE; })) {
    lk.unlock();
    zookeeper_close(zh_);
    throw std::runtime_error("raw zookeeper handle did not connect to " + hosts);
  }
  if (!digest.empty()) {
    zoo_add_auth(zh_, "digest", digest.data(), static_cast<int>(digest.size()), nullptr, nullptr);
  }
}

raw_zk::~raw_zk() {
  if (zh_) zookeeper_close(zh_);
}

std::vector<std::string> raw_zk::children(const std::string& path) {
  String_vector v{};
  if (zoo_get_children(zh_, path.c_str(), 0, &v) != ZOK) return {};
  std::vector<std::string> out(v.data, v.data + v.count);
  deallocate_String_vector(&v);
  return out;
}

bool raw_zk::exists(const std::string& path) {
  struct Stat st {};
  return zoo_exists(zh_, path.c_str(), 0, &st) == ZOK;
}

void expire_zk_session(const dlock::session& s, const std::string& hosts) {
  auto id = detail::zookeeper_identity(s.core()->backend());
  if (!id) throw std::runtime_error("not a ZooKeeper session");
  // The twin takes the session over and closes it, which expires it. If the original client
  // reconnects first it takes the session back and the twin's close never arrives, so try
  // again until the session reports the expiry.
  for (int attempt = 0; attempt < 10; ++attempt) {
    try {
      raw_zk twin(hosts, &*id);
    } catch (const std::runtime_error&) {
      // Already expired: the twin is refused.
    }
    if (poll_until([&] { return s.state() == dlock::session_state::expired; },
                   std::chrono::seconds{3})) {
      return;
    }
  }
  throw std::runtime_error("could not expire ZooKeeper session " + s.id());
}

std::string lock_node(const std::string& name) {
  return "/dlock/" + detail::zk::escape_lock_name(name);
}

}  // namespace dlock::test
