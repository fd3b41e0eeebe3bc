#pragma once
// A real etcd (Debian's etcd-server) for tests: one member on free loopback ports, its data
// directory on a memory file system (/dev/shm when there is one: etcd fsyncs every write),
// never under the caller's $TMPDIR; and etcdctl (etcd-client) to look at or change the store.

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "support/process.hpp"
#include "support/reaper.hpp"

namespace dlock::test {

// A member serving its clients over TLS (https), and what etcdctl needs to reach it.
struct etcd_tls {
  std::string cert_file, key_file;  // the server's certificate and key
  std::string ca_file;           // the CA etcdctl trusts (and, with client_cert_auth, the server)
  bool client_cert_auth{false};  // --client-cert-auth: clients must show a certificate
  std::string client_cert_file, client_key_file;  // etcdctl's, for client_cert_auth
};

class etcd_server {
 public:
  etcd_server();
  explicit etcd_server(std::optional<etcd_tls> tls);
  ~etcd_server();
  etcd_server(const etcd_server&) = delete;

  std::uint16_t port() const noexcept { return client_port_; }
  std::string address() const { return "127.0.0.1:" + std::to_string(client_port_); }
  std::string endpoint() const { return (tls_ ? "https://" : "http://") + address(); }
  pid_t pid() const { return proc_ ? proc_->pid() : -1; }  // -1 if not running

  // Every later etcdctl passes `flag` (--user=root:PASSWORD once auth is enabled).
  void add_etcdctl_flag(std::string flag) { ctl_flags_.push_back(std::move(flag)); }

  // etcdctl ARGS against this member; {exit status, combined output}.
  std::pair<int, std::string> etcdctl(const std::vector<std::string>& args) const;
  // The keys starting with `prefix` (etcdctl get --prefix --keys-only), in key order.
  std::vector<std::string> keys(const std::string& prefix) const;
  // Revokes lease `id` (as the server would end it at its TTL, at once).
  void revoke(std::int64_t id) const;
  // The argv to start `etcdctl ARGS` as a child process against this member.
  std::vector<std::string> etcdctl_argv(const std::vector<std::string>& args) const;

  // SIGKILL, as a crash.
  void kill();
  // SIGTERM and wait (the data directory is kept); start() again on the same ports and data.
  void stop();
  void start();

 private:
  std::vector<std::string> argv_;
  std::optional<etcd_tls> tls_;
  std::vector<std::string> ctl_flags_;
  std::string dir_;
  reaper reaper_{dir_};
  std::uint16_t client_port_{0}, peer_port_{0};
  std::unique_ptr<child_process> proc_;
};

}  // namespace dlock::test
