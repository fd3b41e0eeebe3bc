#pragma once
// Servers and raw ZooKeeper access shared by the tests of this executable. The standalone
// server starts on first use and stops when the executable exits.

#include <zookeeper/zookeeper.h>

#include <chrono>
#include <cstdint>
#include <dlock/dlock.hpp>
#include <memory>
#include <string>
#include <vector>

#include "backends/zookeeper/zk_backend.hpp"
#include "support/zk_server.hpp"

namespace dlock::test {

zk_server& shared_zk();

// A zk:// URL on the shared server (or `hosts`) with a session timeout.
std::string zk_url(std::chrono::milliseconds session_timeout = std::chrono::seconds{4},
                   const std::string& hosts = {});

// A plain C-client handle for looking at what the backend stored.
class raw_zk {
 public:
  // Connects (waits up to 10 s); `identity` reattaches to an existing session.
  explicit raw_zk(const std::string& hosts, const detail::zk::client_identity* identity = nullptr,
                  const std::string& digest = {});
  raw_zk(const raw_zk&) = delete;
  ~raw_zk();
  zhandle_t* zh() const noexcept { return zh_; }
  // Children of `path`; empty if it does not exist.
  std::vector<std::string> children(const std::string& path);
  bool exists(const std::string& path);

  struct waiter;  // connection-state hand-off from the client's thread

 private:
  std::unique_ptr<waiter> w_;
  zhandle_t* zh_{nullptr};
};

// Expires the ZooKeeper session behind `s` from the server side: a second handle on the
// same session id and password, closed, ends the session.
void expire_zk_session(const dlock::session& s, const std::string& hosts);

// The escaped lock node of `name` under the default chroot.
std::string lock_node(const std::string& name);

}  // namespace dlock::test
