#include "support/etcd_server.hpp"

#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "support/net.hpp"

namespace dlock::test {
namespace {

using namespace std::chrono_literals;

// A fresh directory on /dev/shm (else /tmp), not under $TMPDIR: server files only.
std::string make_server_dir() {
  std::string root = std::filesystem::is_directory("/dev/shm") ? "/dev/shm" : "/tmp";
  std::string tmpl = root + "/dlock-etcd-XXXXXX";
  if (!mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp " + tmpl + " failed");
  return tmpl;
}

}  // namespace

etcd_server::etcd_server() : etcd_server(std::nullopt) {}

etcd_server::etcd_server(std::optional<etcd_tls> tls)
    : tls_(std::move(tls)), dir_(make_server_dir()) {
  client_port_ = free_port();
  do peer_port_ = free_port();
  while (peer_port_ == client_port_);
  const std::string client =
      (tls_ ? "https://127.0.0.1:" : "http://127.0.0.1:") + std::to_string(client_port_);
  const std::string peer = "http://127.0.0.1:" + std::to_string(peer_port_);
  argv_ = std::vector<std::string>{"etcd",
                                   "--name",
                                   "t",
                                   "--data-dir",
                                   dir_ + "/data",
                                   "--listen-client-urls",
                                   client,
                                   "--advertise-client-urls",
                                   client,
                                   "--listen-peer-urls",
                                   peer,
                                   "--initial-advertise-peer-urls",
                                   peer,
                                   "--initial-cluster",
                                   "t=" + peer,
                                   "--logger",
                                   "zap",
                                   "--log-outputs",
                                   "stderr"};
  // A quick election (default 1 s): a restarted member (the fault run) leads again sooner,
  // and etcd re-arms every lease to TTL + the election timeout when a leader takes office, so
  // the leases of sessions that ended while it was down lapse within TTL + 0.1 s of that
  // (a single member never needs another election once it leads).
  for (const char* a : {"--heartbeat-interval", "20", "--election-timeout", "100"}) {
    argv_.emplace_back(a);
  }
  if (tls_) {
    argv_.push_back("--cert-file=" + tls_->cert_file);
    argv_.push_back("--key-file=" + tls_->key_file);
    ctl_flags_.push_back("--cacert=" + tls_->ca_file);
    if (tls_->client_cert_auth) {
      argv_.push_back("--client-cert-auth");
      argv_.push_back("--trusted-ca-file=" + tls_->ca_file);
      ctl_flags_.push_back("--cert=" + tls_->client_cert_file);
      ctl_flags_.push_back("--key=" + tls_->client_key_file);
    }
  }
  start();
}

void etcd_server::start() {
  if (proc_) return;
  child_process::options po;
  po.log_file = dir_ + "/etcd.log";
  po.reaped_by = &reaper_;
  proc_ = std::make_unique<child_process>(argv_, po);
  auto until = std::chrono::steady_clock::now() + 30s;
  for (;;) {
    if (wait_for_port(client_port_, 200ms)) {
      auto [rc, out] = etcdctl({"endpoint", "health"});
      if (rc == 0) return;
    }
    if (!proc_->running()) {
      proc_.reset();
      throw std::runtime_error("etcd on port " + std::to_string(client_port_) + " exited; see " +
                               dir_ + "/etcd.log");
    }
    if (std::chrono::steady_clock::now() > until) {
      throw std::runtime_error("etcd on port " + std::to_string(client_port_) +
                               " not healthy within 30 s; see " + dir_ + "/etcd.log");
    }
    std::this_thread::sleep_for(50ms);
  }
}

etcd_server::~etcd_server() {
  kill();
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

void etcd_server::kill() { proc_.reset(); }

void etcd_server::stop() {
  if (!proc_) return;
  proc_->signal(SIGTERM);
  (void)proc_->wait(20s);
  proc_.reset();
}

std::vector<std::string> etcd_server::etcdctl_argv(const std::vector<std::string>& args) const {
  std::vector<std::string> argv{"etcdctl", "--endpoints=" + endpoint(), "--dial-timeout=2s",
                                "--command-timeout=5s"};
  argv.insert(argv.end(), ctl_flags_.begin(), ctl_flags_.end());
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

std::pair<int, std::string> etcd_server::etcdctl(const std::vector<std::string>& args) const {
  return run_command(etcdctl_argv(args), 20s);
}

std::vector<std::string> etcd_server::keys(const std::string& prefix) const {
  auto [rc, out] = etcdctl({"get", "--prefix", "--keys-only", prefix});
  if (rc != 0) throw std::runtime_error("etcdctl get --prefix " + prefix + ": " + out);
  std::vector<std::string> keys;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) keys.push_back(line);
  }
  return keys;
}

void etcd_server::revoke(std::int64_t id) const {
  char hex[17];
  std::snprintf(hex, sizeof hex, "%llx", static_cast<unsigned long long>(id));
  auto [rc, out] = etcdctl({"lease", "revoke", hex});
  if (rc != 0) throw std::runtime_error(std::string("etcdctl lease revoke ") + hex + ": " + out);
}

}  // namespace dlock::test
