#include "support/redis_sentinel.hpp"

#include <hiredis/hiredis.h>

#include <fstream>
#include <stdexcept>
#include <thread>

namespace dlock::test {
namespace {

using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

template <class F>
void await(const std::string& what, std::chrono::milliseconds timeout, F&& done) {
  const auto until = steady::now() + timeout;
  for (;;) {
    try {
      if (done()) return;
    } catch (const std::exception&) {
    }
    if (steady::now() > until) throw std::runtime_error("sentinel_cluster: timed out: " + what);
    std::this_thread::sleep_for(50ms);
  }
}

}  // namespace

sentinel_cluster::sentinel_cluster() {
  // A replica that must sync in full after the failover starts at once (Redis waits 5 s for
  // more replicas by default), so that the new master soon has one to acknowledge writes.
  const std::vector<std::string> fast{"--repl-diskless-sync-delay", "0"};
  servers_.push_back(std::make_unique<redis_server>(redis_server::options{{}, fast}));
  const auto m = std::to_string(servers_[0]->port());
  for (int i = 0; i < 2; ++i) {
    auto args = fast;
    args.insert(args.end(), {"--replicaof", "127.0.0.1", m});
    servers_.push_back(std::make_unique<redis_server>(redis_server::options{{}, args}));
  }
  for (int i = 0; i < 3; ++i) {
    auto port = free_port();
    auto conf = dir_.path() + "/sentinel-" + std::to_string(port) + ".conf";
    // down-after 2 s, not 1: a sentinel starts timing a new master's replies when it switches
    // to it, and on a loaded machine 1 s without one made it declare the new master down and
    // fail over again, to the other replica (seen under ASan with three test binaries at once).
    std::ofstream(conf) << "port " << port << "\nbind 127.0.0.1\ndir " << dir_.path()
                        << "\nsentinel monitor " << name << " 127.0.0.1 " << m << " 2\n"
                        << "sentinel down-after-milliseconds " << name << " 2000\n"
                        << "sentinel failover-timeout " << name << " 3000\n";
    child_process::options po;
    po.log_file = dir_.path() + "/sentinel-" + std::to_string(port) + ".log";
    po.reaped_by = &reaper_;
    sentinels_.push_back(
        std::make_unique<child_process>(std::vector<std::string>{"redis-sentinel", conf}, po));
    sentinel_ports_.push_back(port);
  }
  await("replicas in sync", 20s, [&] {
    for (std::size_t i = 1; i < servers_.size(); ++i) {
      auto info = servers_[i]->command({"INFO", "replication"});
      if (info.empty() || info[0].find("master_link_status:up") == std::string::npos) return false;
    }
    return true;
  });
  // Sentinels find the replicas through the master's INFO and one another through hello
  // messages (every 2 s): a failover needs both.
  await("sentinels know the replicas and one another", 30s, [&] {
    for (std::size_t i = 0; i < sentinel_ports_.size(); ++i) {
      auto master = sentinel_command(i, {"SENTINEL", "master", name});
      for (std::size_t k = 0; k + 1 < master.size(); k += 2) {
        if (master[k] == "num-slaves" && master[k + 1] != "2") return false;
        if (master[k] == "num-other-sentinels" && master[k + 1] != "2") return false;
      }
    }
    return true;
  });
}

sentinel_cluster::~sentinel_cluster() {
  sentinels_.clear();  // SIGKILLed and reaped first: no failover while the servers go
}

std::string sentinel_cluster::sentinel_hosts() const {
  std::string out;
  for (auto p : sentinel_ports_)
    out += (out.empty() ? "127.0.0.1:" : ",127.0.0.1:") + std::to_string(p);
  return out;
}

std::string sentinel_cluster::url(const std::string& query) const {
  return "redis-sentinel://" + sentinel_hosts() + "/" + name + query;
}

std::vector<std::string> sentinel_cluster::sentinel_command(
    std::size_t i, const std::vector<std::string>& argv) const {
  timeval tv{2, 0};
  std::unique_ptr<redisContext, void (*)(redisContext*)> c(
      redisConnectWithTimeout("127.0.0.1", sentinel_ports_[i], tv), redisFree);
  if (!c || c->err) throw std::runtime_error("sentinel: cannot connect");
  std::vector<const char*> p;
  std::vector<std::size_t> l;
  for (auto& a : argv) {
    p.push_back(a.data());
    l.push_back(a.size());
  }
  std::unique_ptr<redisReply, void (*)(void*)> r(
      static_cast<redisReply*>(
          redisCommandArgv(c.get(), static_cast<int>(argv.size()), p.data(), l.data())),
      freeReplyObject);
  if (!r || r->type != REDIS_REPLY_ARRAY) throw std::runtime_error("sentinel: bad reply");
  std::vector<std::string> out;
  for (std::size_t k = 0; k < r->elements; ++k)
    out.emplace_back(r->element[k]->str ? r->element[k]->str : "");
  return out;
}

std::uint16_t sentinel_cluster::master_port() const {
  for (std::size_t i = 0; i < sentinel_ports_.size(); ++i) {
    try {
      auto a = sentinel_command(i, {"SENTINEL", "get-master-addr-by-name", name});
      if (a.size() == 2) return static_cast<std::uint16_t>(std::stoi(a[1]));
    } catch (const std::exception&) {
    }
  }
  throw std::runtime_error("sentinel_cluster: no sentinel names a master");
}

std::size_t sentinel_cluster::await_failover(std::uint16_t old_port,
                                             std::chrono::milliseconds timeout) {
  std::size_t found = 0;
  // Done when every sentinel names the same new master in the same epoch, none is still
  // failing over, and that server says it is a master. The first sentinel's answer alone is
  // not enough: a slow failover can be retried by another sentinel, which promotes the other
  // replica (seen under ASan: the test's next session met a third master).
  await("a failover away from port " + std::to_string(old_port), timeout, [&] {
    std::string port_seen, epoch_seen;
    for (std::size_t i = 0; i < sentinel_ports_.size(); ++i) {
      std::string port, epoch, flags;
      try {
        auto m = sentinel_command(i, {"SENTINEL", "master", name});
        for (std::size_t k = 0; k + 1 < m.size(); k += 2) {
          if (m[k] == "port") port = m[k + 1];
          if (m[k] == "config-epoch") epoch = m[k + 1];
          if (m[k] == "flags") flags = m[k + 1];
        }
      } catch (const std::exception&) {
        return false;
      }
      if (port.empty() || port == std::to_string(old_port)) return false;
      if (flags.find("failover") != std::string::npos) return false;
      if (i > 0 && (port != port_seen || epoch != epoch_seen)) return false;
      port_seen = port;
      epoch_seen = epoch;
    }
    const auto port = static_cast<std::uint16_t>(std::stoi(port_seen));
    for (std::size_t i = 0; i < servers_.size(); ++i) {
      if (servers_[i]->port() != port) continue;
      auto role = servers_[i]->command({"ROLE"});
      if (role.empty() || role[0] != "master") return false;
      found = i;
      return true;
    }
    return false;
  });
  return found;
}

}  // namespace dlock::test
