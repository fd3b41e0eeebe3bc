#pragma once
// A throw-away MariaDB server for tests: mariadb-install-db into a temporary directory (about
// 13 s on a cold machine, so make one per test executable), mariadbd on a free loopback
// port, running as user mysql when we are root. Root connects without a password; a
// database "dlock" and a user "dlock"@"%" with password "secret" exist.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "support/net.hpp"
#include "support/process.hpp"
#include "support/reaper.hpp"

namespace dlock::test {

class mariadb_server {
 public:
  // Installs and starts, passing `server_args` (e.g. "--wait-timeout=5") to mariadbd on
  // every start. Throws std::runtime_error (with the server's log) on failure, also when the
  // MariaDB binaries are missing.
  explicit mariadb_server(std::vector<std::string> server_args = {});
  mariadb_server(const mariadb_server&) = delete;
  ~mariadb_server();

  std::uint16_t port() const { return port_; }
  // mysql://dlock:secret@127.0.0.1:PORT/dlock?<query>
  std::string url(const std::string& query = "") const;
  // Clean shutdown (SIGTERM, waits for exit); start() brings it back on the same port.
  void stop();
  // A crash: SIGKILL, nothing flushed that InnoDB had not made durable; start() recovers it.
  void crash();
  void start();
  bool running() const { return server_.has_value(); }
  // mariadbd's pid while running (one process: its connections are threads).
  pid_t pid() const { return server_ ? server_->pid() : -1; }

  // Runs SQL as root over TCP with `params` bound (prepared); returns the first column of
  // each row of the first result set. Throws on error.
  std::vector<std::string> query(const std::string& sql,
                                 const std::vector<std::string>& params = {}) const;

 private:
  std::string log() const;

  temp_dir dir_{"dlock-mariadb", temp_kind::server};
  reaper reaper_{dir_.path()};
  std::vector<std::string> server_args_;
  std::uint16_t port_{0};
  std::optional<child_process> server_;
};

}  // namespace dlock::test
