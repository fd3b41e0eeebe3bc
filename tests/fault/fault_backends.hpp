#pragma once
// What each backend gives the fault run, and the table of backends and faults it runs.
//
// Adding a backend (e.g. redis) takes a fixture class and one row in backend_table()
// (fault_backends.cpp):
//   1. A class deriving from fault_backend that starts its server in the constructor (free
//      port, temp data dir; stops it in the destructor), returns the port from server_port(),
//      builds worker URLs in url(port) -- `port` is a proxy in front of the server -- and
//      counts raw leftovers in orphans(lock).
//   2. {"redis", [](const std::string& dir) { return std::make_unique<redis_fault>(dir); },
//       with_proxy_faults(process_faults)},
// Faults needing a server (the proxy ones) are only valid for backends with server_port().

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace dlock::fault {

enum class fault {
  none,                    // contention only: the baseline every backend must pass
  kill_holder,             // SIGKILL the holder inside its critical section
  stop_holder,             // SIGSTOP the holder past its TTL, SIGCONT after a newer grant
  stop_holder_late_check,  // same, holder checked its loss signal before pausing: the
                           // fence alone must refuse its stale write
  proxy_blackhole,         // the holder's link forwards nothing for TTL + 0.5 s
  proxy_delay,             // the holder's link delays every chunk by TTL / 4 for one TTL
  proxy_reset,             // RST the holder's connections
  proxy_drop_reply,        // a worker's next request is applied, its reply dropped (RST)
};

const char* to_string(fault f) noexcept;
bool needs_proxy(fault f) noexcept;

class fault_backend {
 public:
  virtual ~fault_backend() = default;
  // The URL a worker opens; it connects to 127.0.0.1:`port` (a proxy in front of
  // server_port(), or 0 for a backend without a server) and carries ttl().
  virtual std::string url(std::uint16_t port) = 0;
  // The server's port, for backends with a server: each worker then gets its own proxy.
  virtual std::optional<std::uint16_t> server_port() const { return std::nullopt; }
  // false: the locks live in one process, so every contender is a thread of one worker.
  virtual bool multi_process() const { return true; }
  virtual std::chrono::milliseconds ttl() const { return std::chrono::seconds{2}; }
  // Entries of `lock` stored in the backend whose session is not live, read raw (not through
  // dlock). Called once every worker has exited; the run polls it for up to TTL + 1 s.
  // In-process backends (multi_process() false) have their worker report this instead.
  virtual std::size_t orphans(const std::string& lock) = 0;
};

struct backend_row {
  std::string name;
  std::function<std::unique_ptr<fault_backend>(const std::string& scratch_dir)> make;
  std::vector<fault> faults;
};

// Faults that apply to every backend whose contenders are separate processes.
extern const std::vector<fault> process_faults;
// process_faults plus the proxy faults, for backends with a server.
std::vector<fault> with_proxy_faults(std::vector<fault> base);

const std::vector<backend_row>& backend_table();

}  // namespace dlock::fault
