#pragma once
// Three real redis-servers as independent Redlock masters, for the Redlock tests.
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "support/redis_server.hpp"

namespace dlock::test {

struct three_masters {
  std::vector<std::unique_ptr<redis_server>> servers;
  three_masters() {
    for (int i = 0; i < 3; ++i) servers.push_back(std::make_unique<redis_server>());
  }
  // redlock:// over the three masters; ports[i] != 0 replaces master i's port (a proxy).
  std::string url(const std::string& query, std::vector<std::uint16_t> ports = {0, 0, 0}) const {
    std::string hosts;
    for (std::size_t i = 0; i < servers.size(); ++i) {
      auto port = ports[i] ? ports[i] : servers[i]->port();
      hosts += (hosts.empty() ? "" : ",") + ("127.0.0.1:" + std::to_string(port));
    }
    return "redlock://" + hosts + "?" + query;
  }
};

// Polls `done` every 10 ms for up to `d`.
template <class F>
inline bool within(std::chrono::milliseconds d, F done) {
  auto until = std::chrono::steady_clock::now() + d;
  while (!done()) {
    if (std::chrono::steady_clock::now() >= until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds{10});
  }
  return true;
}

}  // namespace dlock::test
