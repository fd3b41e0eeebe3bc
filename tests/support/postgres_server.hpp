#pragma once
// A throw-away PostgreSQL 15 server for tests: initdb into a temporary directory, started on
// a free loopback port, its socket in the same directory. PostgreSQL refuses to run as root,
// so as root every server command runs as user postgres (runuser). Local (socket)
// connections are trusted for the superuser; TCP connections need a password, so a wrong
// password is refused. A database "dlock" owned by user "dlock" (password "secret") exists.

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "support/net.hpp"
#include "support/reaper.hpp"

namespace dlock::test {

class postgres_server {
 public:
  // initdb + start. Throws std::runtime_error (with the server's log) on failure, also
  // when the PostgreSQL binaries are missing.
  postgres_server();
  postgres_server(const postgres_server&) = delete;
  ~postgres_server();

  std::uint16_t port() const { return port_; }
  // postgres://dlock:secret@127.0.0.1:PORT/dlock?<query>
  std::string url(const std::string& query = "") const;
  // Fast shutdown (clients are disconnected); start() brings it back on the same port.
  void stop();
  // A crash: `pg_ctl stop -m immediate` (no shutdown checkpoint; what sits in the WAL buffers
  // is lost, as a commit made with synchronous_commit off). start() recovers from the WAL.
  void crash();
  void start();
  bool running() const { return running_; }
  // The postmaster's pid while running (its own process group: pg_ctl starts it with setsid).
  pid_t postmaster_pid() const { return postmaster_; }
  // The postmaster and its children (backends, WAL writer, ...), the postmaster first. Each
  // backend is a session leader of its own, so the postmaster's process group misses them.
  std::vector<pid_t> processes() const;
  const std::string& dir() const noexcept { return dir_.path(); }

  // Runs SQL as the superuser over the socket; returns the first column of each row.
  // Throws on error.
  std::vector<std::string> query(const std::string& sql,
                                 const std::vector<std::string>& params = {},
                                 const std::string& db = "dlock") const;

 private:
  std::vector<std::string> as_postgres(std::vector<std::string> argv) const;
  std::string log() const;
  void watch_postmaster();
  void forget_postmaster();

  temp_dir dir_{"dlock-pg", temp_kind::server};
  reaper reaper_{dir_.path()};
  std::uint16_t port_{0};
  bool running_{false};
  pid_t postmaster_{-1};
};

}  // namespace dlock::test
