#pragma once
// Three (or n) real etcd members (Debian's etcd-server) forming one cluster on free loopback
// ports, for failover tests: their data directories on a memory file system (/dev/shm when
// there is one; etcd fsyncs every write), under one directory of the fixture's own.
// Heartbeat 50 ms, election timeout 500 ms: a killed leader is replaced within about a second.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "support/process.hpp"
#include "support/reaper.hpp"

namespace dlock::test {

class etcd_cluster {
 public:
  // The members' --election-timeout: a follower that hears no leader for a random time in
  // [this, 2 x this) campaigns (etcd's raft).
  static constexpr std::chrono::milliseconds election_timeout{500};

  explicit etcd_cluster(std::size_t members = 3);
  ~etcd_cluster();
  etcd_cluster(const etcd_cluster&) = delete;

  std::size_t size() const noexcept { return members_.size(); }
  std::uint16_t port(std::size_t i) const { return members_.at(i).client_port; }
  // "127.0.0.1:p0,127.0.0.1:p1,127.0.0.1:p2": every member, for an etcd:// URL.
  std::string hosts() const;

  // The index of the member that leads, asked of the running members; nullopt if none knows.
  std::optional<std::size_t> leader() const;
  // Makes member i the leader (etcdctl move-leader) and waits until the members agree.
  void make_leader(std::size_t i);
  // SIGKILL member i (a crash; its data kept); start(i) brings it back with its data.
  void kill(std::size_t i);
  void start(std::size_t i);
  bool running(std::size_t i) const { return members_.at(i).proc != nullptr; }
  // Member i's process id (-1 if it is not running): to SIGSTOP and SIGCONT it.
  pid_t pid(std::size_t i) const { return running(i) ? members_.at(i).proc->pid() : -1; }

  // etcdctl ARGS against the running members; {exit status, combined output}.
  std::pair<int, std::string> etcdctl(const std::vector<std::string>& args) const;
  // The keys starting with `prefix`, in key order.
  std::vector<std::string> keys(const std::string& prefix) const;

 private:
  struct member {
    std::string name, data;
    std::uint16_t client_port{0}, peer_port{0};
    std::vector<std::string> argv;
    std::unique_ptr<child_process> proc;
  };
  std::string endpoints(bool running_only) const;
  void wait_healthy(std::size_t i) const;
  // {member id, leader id} as member i reports them (etcdctl endpoint status).
  std::optional<std::pair<std::uint64_t, std::uint64_t>> status(std::size_t i) const;

  std::string dir_;
  reaper reaper_{dir_};
  std::vector<member> members_;
};

}  // namespace dlock::test
