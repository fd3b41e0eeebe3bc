// The fault run's etcd backend: one member (data on /dev/shm), restartable with its data;
// sessions expired from the server side by revoking the leases their workers report. And a
// three-member cluster whose leader is killed.
// Orphans are counted raw with etcdctl: once every worker has exited, any key left under the
// lock's name (a contender key or its companion) outlived its session.
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "fault/fault_backends.hpp"
#include "support/etcd_cluster.hpp"
#include "support/etcd_server.hpp"
#include "support/net.hpp"

namespace dlock::fault {
namespace {

class etcd_fault final : public fault_backend {
 public:
  std::string url(const std::vector<std::uint16_t>& ports) override {
    return "etcd://127.0.0.1:" + std::to_string(ports.at(0)) + "/" + prefix_ +
           "?ttl=" + std::to_string(ttl().count()) + "ms";
  }
  std::vector<std::uint16_t> server_ports() const override { return {server_.port()}; }
  // The session is a lease: a reconnect within its TTL keeps it (docs/etcd.md, *Reconnecting
  // after a refused connection*).
  bool sessions_survive_reconnect() const override { return true; }

  // "P/NAME" covers both "P/NAME/<lease>" and its companion "P/NAME\0dlock/<lease>".
  std::size_t orphans(const std::string& lock) override {
    return server_.keys(prefix_ + "/" + lock).size();
  }

  // The fixtures' expire(): revoking the session's leases deletes its keys at once.
  void expire(const worker_session& ws) override {
    if (ws.etcd_leases.empty()) {
      throw std::runtime_error("worker " + ws.id + " reported no etcd lease");
    }
    for (auto id : ws.etcd_leases) server_.revoke(id);
  }

  void stop_server(bool) override { server_.stop(); }
  void start_server() override { server_.start(); }

 private:
  test::etcd_server server_;
  std::string prefix_ = "f" + test::random_suffix();
};

// Three members; the fault kills the leader (-9) while a lock is held and others wait, and
// restarts it (as a follower, with its data) once the next grant was seen.
class etcd_cluster_fault final : public fault_backend {
 public:
  std::string url(const std::vector<std::uint16_t>& ports) override {
    std::string hosts;
    for (auto p : ports) hosts += (hosts.empty() ? "" : ",") + ("127.0.0.1:" + std::to_string(p));
    return "etcd://" + hosts + "/" + prefix_ + "?ttl=" + std::to_string(ttl().count()) + "ms";
  }
  std::vector<std::uint16_t> server_ports() const override {
    std::vector<std::uint16_t> p;
    for (std::size_t i = 0; i < cluster_.size(); ++i) p.push_back(cluster_.port(i));
    return p;
  }
  bool sessions_survive_reconnect() const override { return true; }
  // A new leader extends every lease by its TTL (etcd's lessor on promotion): a holder lost
  // across the election is freed a TTL after it, not after its last renewal.
  std::chrono::milliseconds leader_election() const override {
    return 2 * test::etcd_cluster::election_timeout;
  }
  std::size_t orphans(const std::string& lock) override {
    return cluster_.keys(prefix_ + "/" + lock).size();
  }
  std::string kill_member(int) override {
    auto l = cluster_.leader();
    if (!l) throw std::runtime_error("the etcd cluster has no leader");
    cluster_.kill(*l);
    killed_ = *l;
    return "leader (member " + std::to_string(*l + 1) + ")";
  }
  void restart_member() override { cluster_.start(killed_); }
  std::string freeze_member(int) override {
    auto l = cluster_.leader();
    if (!l) throw std::runtime_error("the etcd cluster has no leader");
    frozen_.freeze(cluster_.pid(*l));
    return "leader (member " + std::to_string(*l + 1) + ")";
  }
  void thaw_member() override { frozen_.thaw(); }
  std::chrono::milliseconds member_freeze_ttl() const override { return outage_ttl; }
  bool commits_need_a_leader() const override { return true; }
  std::chrono::milliseconds member_down_time() const override {
    return std::chrono::milliseconds{0};
  }

 private:
  test::etcd_cluster cluster_{3};
  std::size_t killed_{0};
  frozen_member frozen_;
  std::string prefix_ = "f" + test::random_suffix();
};

}  // namespace

std::unique_ptr<fault_backend> make_etcd_fault(const std::string&) {
  return std::make_unique<etcd_fault>();
}
std::unique_ptr<fault_backend> make_etcd_cluster_fault(const std::string&) {
  return std::make_unique<etcd_cluster_fault>();
}

}  // namespace dlock::fault
