#pragma once
// A Redis Sentinel set-up for tests, all on free loopback ports with temporary directories: one
// master, two replicas of it and three sentinels (quorum 2) that fail over fast
// (down-after-milliseconds 1000, failover-timeout 3000). With 500 ms a sentinel on a loaded
// 2-core machine marked a just-promoted master down before its first PING and failed over
// again, back and forth between the replicas.

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "support/net.hpp"
#include "support/process.hpp"
#include "support/reaper.hpp"
#include "support/redis_server.hpp"

namespace dlock::test {

class sentinel_cluster {
 public:
  static constexpr const char* name = "mymaster";
  // Starts everything and waits until the sentinels know both replicas and one another (so
  // that a failover can be voted) and both replicas are in sync.
  sentinel_cluster();
  ~sentinel_cluster();
  sentinel_cluster(const sentinel_cluster&) = delete;

  // "127.0.0.1:p1,127.0.0.1:p2,127.0.0.1:p3"
  std::string sentinel_hosts() const;
  // redis-sentinel://<sentinels>/mymaster, then `query` ("?ttl=5s...") as given.
  std::string url(const std::string& query = {}) const;

  redis_server& master() { return *servers_[0]; }
  const std::string& dir() const { return dir_.path(); }  // the sentinels' configs and logs
  // The servers: [0] the first master, [1] and [2] its replicas.
  redis_server& server(std::size_t i) { return *servers_[i]; }
  // The port the sentinels name as master now (asks the first sentinel that answers).
  std::uint16_t master_port() const;
  // Waits until the sentinels name a master other than the server on `old_port` and that
  // server answers ROLE master; returns its index in server(). Throws after `timeout`.
  std::size_t await_failover(std::uint16_t old_port, std::chrono::milliseconds timeout);

 private:
  std::vector<std::string> sentinel_command(std::size_t i,
                                            const std::vector<std::string>& argv) const;

  std::vector<std::unique_ptr<redis_server>> servers_;
  temp_dir dir_{"dlock-sentinel", temp_kind::server};
  reaper reaper_{dir_.path()};
  std::vector<std::uint16_t> sentinel_ports_;
  std::vector<std::unique_ptr<child_process>> sentinels_;
};

}  // namespace dlock::test
