// ZooKeeper: create ephemeral-sequential + get_children + delete (the recipe's three requests,
// two of them fsynced writes). Contended: the recipe itself by hand -- wait on the predecessor
// with an exists watch -- so one handoff is one delete plus one watch event.
#include <zookeeper/zookeeper.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "floor_common.hpp"

namespace dlock::floor {
namespace {

constexpr const char* dir = "/dlock-floor";

struct watch_signal {
  std::mutex mu;
  std::condition_variable cv;
  unsigned long fired{0};
};

void session_watcher(zhandle_t*, int, int, const char*, void*) {}

void node_watcher(zhandle_t*, int, int, const char*, void* ctx) {
  auto* s = static_cast<watch_signal*>(ctx);
  std::lock_guard lk(s->mu);
  ++s->fired;
  s->cv.notify_all();
}

class zk_client final : public client {
 public:
  explicit zk_client(const target& t) {
    zoo_set_debug_level(ZOO_LOG_LEVEL_ERROR);
    std::string hosts = t.host + ":" + std::to_string(t.port ? t.port : 2181);
    zh_ = zookeeper_init(hosts.c_str(), session_watcher, 10000, nullptr, nullptr, 0);
    if (!zh_) throw std::runtime_error("zookeeper: init failed");
    // As dlock's session does: the C client otherwise re-resolves its hosts at each wake-up,
    // a cost no raw round trip has to pay.
    zoo_set_servers_resolution_delay(zh_, 10000);
    auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (zoo_state(zh_) != ZOO_CONNECTED_STATE) {
      if (std::chrono::steady_clock::now() > until) {
        zookeeper_close(zh_);
        throw std::runtime_error("zookeeper: not connected after 10 s");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    int rc = zoo_create(zh_, dir, "", 0, &ZOO_OPEN_ACL_UNSAFE, 0, nullptr, 0);
    if (rc != ZOK && rc != ZNODEEXISTS) fail("create parent", rc);
  }
  ~zk_client() override { zookeeper_close(zh_); }

  void cycle() override {
    auto me = create();
    children();
    remove(me);
  }
  bool has_blocking() const override { return true; }
  void acquire() override {
    mine_ = create();
    const std::string name = mine_.substr(std::strlen(dir) + 1);
    for (int i = 0; i < 100000; ++i) {
      auto kids = children();
      auto it = std::find(kids.begin(), kids.end(), name);
      if (it == kids.end()) throw std::runtime_error("zookeeper: own node gone");
      if (it == kids.begin()) return;
      const std::string pred = std::string(dir) + "/" + *(it - 1);
      unsigned long seen;
      {
        std::lock_guard lk(sig_.mu);
        seen = sig_.fired;
      }
      Stat st;
      int rc = zoo_wexists(zh_, pred.c_str(), node_watcher, &sig_, &st);
      if (rc == ZNONODE) continue;
      if (rc != ZOK) fail("exists", rc);
      std::unique_lock lk(sig_.mu);
      if (!sig_.cv.wait_for(lk, std::chrono::seconds(10), [&] { return sig_.fired != seen; })) {
        throw std::runtime_error("zookeeper: no watch event in 10 s");
      }
    }
    throw std::runtime_error("zookeeper: acquire gave up");
  }
  void release() override { remove(mine_); }
  std::string what() const override {
    return "libzookeeper-mt: create ephemeral-sequential + get_children + delete; contended: "
           "the same plus an exists watch on the predecessor";
  }

 private:
  [[noreturn]] static void fail(const char* what, int rc) {
    throw std::runtime_error(std::string("zookeeper ") + what + ": " + zerror(rc));
  }
  std::string create() {
    char buf[256];
    std::string prefix = std::string(dir) + "/n-";
    int rc = zoo_create(zh_, prefix.c_str(), "", 0, &ZOO_OPEN_ACL_UNSAFE,
                        ZOO_EPHEMERAL | ZOO_SEQUENCE, buf, sizeof buf);
    if (rc != ZOK) fail("create", rc);
    return buf;
  }
  std::vector<std::string> children() {
    String_vector sv{};
    int rc = zoo_get_children(zh_, dir, 0, &sv);
    if (rc != ZOK) fail("get_children", rc);
    std::vector<std::string> out(sv.data, sv.data + sv.count);
    deallocate_String_vector(&sv);
    std::sort(out.begin(), out.end());  // same prefix, zero-padded sequence: order by number
    return out;
  }
  void remove(const std::string& path) {
    int rc = zoo_delete(zh_, path.c_str(), -1);
    if (rc != ZOK && rc != ZNONODE) fail("delete", rc);
  }
  zhandle_t* zh_{nullptr};
  std::string mine_;
  watch_signal sig_;
};

}  // namespace

std::unique_ptr<client> make_zk(const target& t) { return std::make_unique<zk_client>(t); }

}  // namespace dlock::floor
