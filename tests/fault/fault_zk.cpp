// The fault run's ZooKeeper backends: a standalone server (restartable) and a three-server
// ensemble (its leader killed). Expiry and the orphan count go to the servers directly with
// the plain C client, never through dlock.
#include <signal.h>
#include <zookeeper/zookeeper.h>

#include <condition_variable>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "fault/fault_backends.hpp"
#include "support/zk_server.hpp"
#include "zookeeper/zk_env.hpp"

namespace dlock::fault {
namespace {

using namespace std::chrono_literals;

void quiet(const char*) {}

struct state_box {
  std::mutex m;
  std::condition_variable cv;
  int state{0};
};

void on_state(zhandle_t*, int type, int state, const char*, void* ctx) {
  if (type != ZOO_SESSION_EVENT) return;
  auto* b = static_cast<state_box*>(ctx);
  {
    std::lock_guard lk(b->m);
    b->state = state;
  }
  b->cv.notify_all();
}

// Expires a session from the server side: a second handle attaches to the same session id
// and password and closes it, which ends the session. If the worker's client reconnects
// first, it takes the session back and the twin's close ends nothing, so repeat until the
// server refuses the twin (the session is gone).
void expire_zk(const std::string& hosts, const worker_session& ws) {
  if (ws.zk_session == 0 || ws.zk_password.size() != 16)
    throw std::runtime_error("worker " + ws.id + " reported no ZooKeeper session identity");
  for (int attempt = 0; attempt < 8; ++attempt) {
    clientid_t id{};
    id.client_id = ws.zk_session;
    std::copy(ws.zk_password.begin(), ws.zk_password.end(), id.passwd);
    state_box box;
    zhandle_t* zh = zookeeper_init2(hosts.c_str(), &on_state, 10000, &id, &box, 0, &quiet);
    if (!zh) throw std::runtime_error("zookeeper_init failed");
    int st = 0;
    {
      std::unique_lock lk(box.m);
      box.cv.wait_for(lk, 5s, [&] {
        return box.state == ZOO_CONNECTED_STATE || box.state == ZOO_EXPIRED_SESSION_STATE;
      });
      st = box.state;
    }
    zookeeper_close(zh);  // ends the session if the twin had attached
    if (st == ZOO_EXPIRED_SESSION_STATE) return;
    std::this_thread::sleep_for(100ms);
  }
  throw std::runtime_error("could not expire ZooKeeper session of " + ws.id);
}

std::string hosts_of(const std::vector<std::uint16_t>& ports) {
  std::string h;
  for (auto p : ports) h += (h.empty() ? "" : ",") + ("127.0.0.1:" + std::to_string(p));
  return h;
}

// Shared by both: a chroot of our own, URLs, expiry and the orphan count.
class zk_fault_base : public fault_backend {
 public:
  std::string url(const std::vector<std::uint16_t>& ports) override {
    return "zk://" + hosts_of(ports) + chroot_ +
           "?session_timeout=" + std::to_string(ttl().count()) + "ms";
  }
  // Every worker has exited when this runs, so no session of ours is live any more (a killed
  // worker's session expires within the poll window): every child left under the lock's node
  // is an orphan -- a duplicate from a lost create reply, an entry a crashed holder left, or
  // a persistent node where an ephemeral one belonged.
  std::size_t orphans(const std::string& lock) override {
    test::raw_zk raw(hosts_of(server_ports()));
    return raw.children(chroot_ + test::lock_node(lock)).size();
  }
  void expire(const worker_session& ws) override { expire_zk(hosts_of(server_ports()), ws); }
  // A reconnect within the session timeout keeps the session and its nodes (docs/zookeeper.md).
  bool sessions_survive_reconnect() const override { return true; }

 private:
  std::string chroot_ = "/fault-" + test::random_suffix();
};

class zk_standalone_fault final : public zk_fault_base {
 public:
  std::vector<std::uint16_t> server_ports() const override { return {server_.port()}; }
  // The transaction log is fsynced per write, so a crash keeps the data: both kinds of stop
  // are a SIGKILL.
  void stop_server(bool) override { server_.stop(); }
  void start_server() override { server_.start(); }

 private:
  test::zk_server server_;
};

class zk_ensemble_fault final : public zk_fault_base {
 public:
  std::vector<std::uint16_t> server_ports() const override {
    std::vector<std::uint16_t> p;
    for (std::size_t i = 0; i < ensemble_.size(); ++i) p.push_back(ensemble_.member(i).port());
    return p;
  }
  std::string kill_member(int) override {
    auto l = ensemble_.leader();
    if (!l) throw std::runtime_error("the ensemble has no leader");
    ensemble_.stop(*l);
    killed_ = *l;
    return "leader (member " + std::to_string(*l + 1) + ")";
  }
  void restart_member() override { ensemble_.member(killed_).start(""); }
  std::string freeze_member(int) override {
    auto l = ensemble_.leader();
    if (!l) throw std::runtime_error("the ensemble has no leader");
    frozen_.freeze(ensemble_.member(*l).pid());
    return "leader (member " + std::to_string(*l + 1) + ")";
  }
  void thaw_member() override { frozen_.thaw(); }
  std::chrono::milliseconds member_freeze_ttl() const override { return outage_ttl; }
  bool commits_need_a_leader() const override { return true; }
  // Down until a grant was seen; the restarted member joins as a follower.
  std::chrono::milliseconds member_down_time() const override { return 0ms; }

 private:
  mutable test::zk_ensemble ensemble_{3};
  std::size_t killed_{0};
  frozen_member frozen_;
};

}  // namespace

std::unique_ptr<fault_backend> make_zk_fault(const std::string&) {
  return std::make_unique<zk_standalone_fault>();
}
std::unique_ptr<fault_backend> make_zk_ensemble_fault(const std::string&) {
  return std::make_unique<zk_ensemble_fault>();
}

}  // namespace dlock::fault
