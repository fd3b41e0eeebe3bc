#pragma once
// ZooKeeper servers for tests, from the Debian `zookeeper` package: a standalone server and
// a three-server ensemble, on free loopback ports with temporary data directories.
// tickTime is 500 ms so sessions may be as short as 1 s (minSessionTimeout = 2 ticks), and
// empty container nodes are reaped every second.

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "support/net.hpp"
#include "support/process.hpp"
#include "support/reaper.hpp"

namespace dlock::test {

// The answer to a four-letter-word command ("srvr", "ruok", ...) on 127.0.0.1:port, or
// empty when the server does not answer within `timeout`.
std::string zk_four_letter(std::uint16_t port, const std::string& command,
                           std::chrono::milliseconds timeout = std::chrono::seconds{2});

// One ZooKeeper server process (a standalone server or an ensemble member).
class zk_process {
 public:
  zk_process(std::string dir, std::uint16_t client_port, reaper& watchdog);
  zk_process(const zk_process&) = delete;
  ~zk_process();
  // Starts the JVM with <dir>/zoo.cfg (written by the owner); throws if java or the jar is
  // missing or if the server does not answer `srvr` in `mode` within a minute.
  void start(const std::string& expected_mode);
  void kill();  // SIGKILL and reap
  bool running() const { return proc_.has_value(); }
  pid_t pid() const { return proc_ ? proc_->pid() : -1; }  // -1 if not running
  std::uint16_t port() const noexcept { return port_; }
  const std::string& dir() const noexcept { return dir_; }
  // "leader", "follower", "standalone", or empty when not serving.
  std::string mode() const;

 private:
  std::string dir_;
  std::uint16_t port_;
  reaper* reaper_;
  std::optional<child_process> proc_;
};

class zk_server {
 public:
  zk_server();
  std::uint16_t port() const noexcept { return proc_->port(); }
  std::string hosts() const { return "127.0.0.1:" + std::to_string(port()); }
  pid_t pid() const { return proc_->pid(); }  // -1 if not running
  // SIGKILL (a crash: the transaction log is already on disk), then start again on the same
  // port and data directory; sessions survive if the client reconnects within their timeout.
  void stop() { proc_->kill(); }
  void start() { proc_->start("standalone"); }

 private:
  temp_dir dir_{"dlock-zk", temp_kind::server};
  reaper reaper_{dir_.path()};
  std::unique_ptr<zk_process> proc_;
};

class zk_ensemble {
 public:
  explicit zk_ensemble(int size = 3);
  // "127.0.0.1:p1,127.0.0.1:p2,127.0.0.1:p3"
  std::string hosts() const;
  std::size_t size() const noexcept { return members_.size(); }
  zk_process& member(std::size_t i) { return *members_[i]; }
  // Index of the member that reports itself leader, waiting up to `timeout` for one.
  std::optional<std::size_t> leader(std::chrono::milliseconds timeout = std::chrono::seconds{30});
  // Kills the member (SIGKILL), as a crash would.
  void stop(std::size_t i) { members_[i]->kill(); }

 private:
  temp_dir dir_{"dlock-zk-ensemble", temp_kind::server};
  reaper reaper_{dir_.path()};
  std::vector<std::unique_ptr<zk_process>> members_;
};

}  // namespace dlock::test
