#include "support/etcd_cluster.hpp"

#include <stdlib.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "support/net.hpp"

namespace dlock::test {
namespace {

using namespace std::chrono_literals;

// A fresh directory on /dev/shm (else /tmp), not under $TMPDIR: server files only.
std::string make_cluster_dir() {
  std::string root = std::filesystem::is_directory("/dev/shm") ? "/dev/shm" : "/tmp";
  std::string tmpl = root + "/dlock-etcd3-XXXXXX";
  if (!mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp " + tmpl + " failed");
  return tmpl;
}

std::string url(std::uint16_t port) { return "http://127.0.0.1:" + std::to_string(port); }

}  // namespace

etcd_cluster::etcd_cluster(std::size_t n) : dir_(make_cluster_dir()), members_(n) {
  std::vector<std::uint16_t> taken;
  auto fresh = [&] {
    for (;;) {
      auto p = free_port();
      if (std::find(taken.begin(), taken.end(), p) == taken.end()) {
        taken.push_back(p);
        return p;
      }
    }
  };
  std::string initial;
  for (std::size_t i = 0; i < n; ++i) {
    auto& m = members_[i];
    m.name = "m" + std::to_string(i);
    m.data = dir_ + "/" + m.name;
    m.client_port = fresh();
    m.peer_port = fresh();
    initial += (i ? "," : "") + m.name + "=" + url(m.peer_port);
  }
  const auto token = "dlock-" + random_suffix();
  const auto election_ms = std::to_string(election_timeout.count());
  for (auto& m : members_) {
    m.argv = {"etcd",
              "--name",
              m.name,
              "--data-dir",
              m.data,
              "--listen-client-urls",
              url(m.client_port),
              "--advertise-client-urls",
              url(m.client_port),
              "--listen-peer-urls",
              url(m.peer_port),
              "--initial-advertise-peer-urls",
              url(m.peer_port),
              "--initial-cluster",
              initial,
              "--initial-cluster-token",
              token,
              "--initial-cluster-state",
              "new",
              "--heartbeat-interval",
              "50",
              "--election-timeout",
              election_ms,
              "--logger",
              "zap",
              "--log-outputs",
              "stderr"};
  }
  // All at once: a member waits for a quorum before it answers health checks.
  for (std::size_t i = 0; i < n; ++i) {
    child_process::options po;
    po.log_file = dir_ + "/" + members_[i].name + ".log";
    po.reaped_by = &reaper_;
    members_[i].proc = std::make_unique<child_process>(members_[i].argv, po);
  }
  for (std::size_t i = 0; i < n; ++i) wait_healthy(i);
}

etcd_cluster::~etcd_cluster() {
  for (auto& m : members_) m.proc.reset();
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

std::string etcd_cluster::hosts() const {
  std::string h;
  for (const auto& m : members_) {
    h += (h.empty() ? "" : ",") + ("127.0.0.1:" + std::to_string(m.client_port));
  }
  return h;
}

std::string etcd_cluster::endpoints(bool running_only) const {
  std::string e;
  for (const auto& m : members_) {
    if (running_only && !m.proc) continue;
    e += (e.empty() ? "" : ",") + url(m.client_port);
  }
  return e;
}

void etcd_cluster::wait_healthy(std::size_t i) const {
  const auto& m = members_.at(i);
  auto until = std::chrono::steady_clock::now() + 30s;
  for (;;) {
    if (wait_for_port(m.client_port, 200ms)) {
      auto [rc, out] =
          run_command({"etcdctl", "--endpoints=" + url(m.client_port), "--dial-timeout=2s",
                       "--command-timeout=3s", "endpoint", "health"},
                      10s);
      if (rc == 0) return;
    }
    if (std::chrono::steady_clock::now() > until) {
      throw std::runtime_error("etcd member " + m.name + " not healthy within 30 s; see " + dir_ +
                               "/" + m.name + ".log");
    }
    std::this_thread::sleep_for(50ms);
  }
}

void etcd_cluster::kill(std::size_t i) { members_.at(i).proc.reset(); }

void etcd_cluster::start(std::size_t i) {
  auto& m = members_.at(i);
  if (m.proc) return;
  child_process::options po;
  po.log_file = dir_ + "/" + m.name + ".log.restarted";
  po.reaped_by = &reaper_;
  m.proc = std::make_unique<child_process>(m.argv, po);
  wait_healthy(i);
}

std::pair<int, std::string> etcd_cluster::etcdctl(const std::vector<std::string>& args) const {
  std::vector<std::string> argv{"etcdctl", "--endpoints=" + endpoints(true), "--dial-timeout=2s",
                                "--command-timeout=5s"};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_command(argv, 20s);
}

std::vector<std::string> etcd_cluster::keys(const std::string& prefix) const {
  auto [rc, out] = etcdctl({"get", "--prefix", "--keys-only", prefix});
  if (rc != 0) throw std::runtime_error("etcdctl get --prefix " + prefix + ": " + out);
  std::vector<std::string> keys;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) keys.push_back(line);
  }
  return keys;
}

std::optional<std::pair<std::uint64_t, std::uint64_t>> etcd_cluster::status(std::size_t i) const {
  if (!members_.at(i).proc) return std::nullopt;
  auto [rc, out] =
      run_command({"etcdctl", "--endpoints=" + url(members_[i].client_port), "--dial-timeout=1s",
                   "--command-timeout=2s", "endpoint", "status", "-w", "json"},
                  10s);
  if (rc != 0) return std::nullopt;
  static const std::regex member_re(R"("member_id":(\d+))"), leader_re(R"("leader":(\d+))");
  std::smatch a, b;
  if (!std::regex_search(out, a, member_re) || !std::regex_search(out, b, leader_re)) {
    return std::nullopt;
  }
  return std::pair{std::stoull(a[1]), std::stoull(b[1])};
}

std::optional<std::size_t> etcd_cluster::leader() const {
  std::vector<std::optional<std::pair<std::uint64_t, std::uint64_t>>> st;
  for (std::size_t i = 0; i < members_.size(); ++i) st.push_back(status(i));
  for (std::size_t i = 0; i < members_.size(); ++i) {
    if (!st[i] || st[i]->second == 0) continue;
    for (std::size_t j = 0; j < members_.size(); ++j) {
      if (st[j] && st[j]->first == st[i]->second) return j;
    }
  }
  return std::nullopt;
}

void etcd_cluster::make_leader(std::size_t i) {
  auto until = std::chrono::steady_clock::now() + 20s;
  for (;;) {
    auto l = leader();
    if (l == i) return;
    auto target = status(i);
    if (l && target) {
      char hex[17];
      std::snprintf(hex, sizeof hex, "%llx", static_cast<unsigned long long>(target->first));
      // move-leader must be sent to the current leader.
      (void)run_command({"etcdctl", "--endpoints=" + url(members_[*l].client_port),
                         "--dial-timeout=2s", "--command-timeout=5s", "move-leader", hex},
                        10s);
    }
    if (std::chrono::steady_clock::now() > until) {
      throw std::runtime_error("etcd member " + members_[i].name + " did not become leader");
    }
    std::this_thread::sleep_for(100ms);
  }
}

}  // namespace dlock::test
