#pragma once
// A real redis-server for tests: started on a free loopback port with a temporary directory,
// no persistence unless asked (`--save '' --appendonly no`), restartable on the same port,
// and a raw hiredis client to look at or change what the server stores.

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

class redis_server {
 public:
  struct options {
    std::string password;                 // requirepass for the default user
    std::vector<std::string> extra_args;  // e.g. {"--user", "alice on >pw ~* &* +@all"}
  };
  redis_server() : redis_server(options{}) {}
  explicit redis_server(options o);
  ~redis_server();
  redis_server(const redis_server&) = delete;

  std::uint16_t port() const noexcept { return port_; }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  bool running() const noexcept { return proc_ != nullptr; }
  // The running server's pid (-1 if stopped) and its directory.
  pid_t pid() const noexcept { return proc_ ? proc_->pid() : -1; }
  const std::string& dir() const noexcept { return dir_.path(); }

  // Starts (again) on the same port and directory; waits until it answers PING.
  void start();
  // SHUTDOWN SAVE (the data survives a start()) or NOSAVE (it does not).
  void stop(bool keep_data = false);
  // SIGKILL, as a crash.
  void kill();
  void restart(bool keep_data) {
    stop(keep_data);
    start();
  }

  // One command on a fresh connection. Strings, integers (as text) and nested arrays are
  // flattened; nil is "(nil)". Throws std::runtime_error on an error reply.
  std::vector<std::string> command(const std::vector<std::string>& argv) const;
  long long integer(const std::vector<std::string>& argv) const;
  // Every key matching `pattern` (KEYS; test data sets are small).
  std::vector<std::string> keys(const std::string& pattern) const;
  // The entry ids dlock stores for `lock` under `prefix`, in queue order: a lone holder in
  // the gate key h:<lock>, else the members of the queue q:<lock> (see redis_scripts.hpp).
  std::vector<std::string> entry_ids(const std::string& prefix, const std::string& lock) const;
  // The lone holder's stored text "id|token|kind|session|created|grant|owner", if any.
  std::optional<std::string> lone_holder(const std::string& prefix, const std::string& lock) const;

 private:
  options opt_;
  temp_dir dir_{"dlock-redis", temp_kind::server};
  reaper reaper_{dir_.path()};
  std::uint16_t port_;
  std::unique_ptr<child_process> proc_;
};

}  // namespace dlock::test
