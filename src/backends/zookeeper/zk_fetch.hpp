#pragma once
// Reads of many nodes at once: the requests are pipelined on the one connection, so N nodes
// cost about one round trip instead of N.

#include <zookeeper/zookeeper.h>

#include <chrono>
#include <stop_token>
#include <string>
#include <vector>

#include "core/result.hpp"

namespace dlock::detail::zk {

struct node_read {
  int rc{0};  // ZOK or ZNONODE; any other code fails the whole fetch
  struct Stat stat {};
  std::string data;
};

// getData of every path (no watch). `limit` bounds the wait for the replies; the client
// answers every request (with ZCONNECTIONLOSS if need be), so it is only a backstop.
// On failure returns the first non-ZOK, non-ZNONODE code (as an int, for the caller's
// error mapping) together with the path concerned.
struct fetch_error {
  int rc;
  std::string path;
};
// `stop` gives up at once (err.rc ZCLOSING).
std::vector<node_read> fetch_nodes(zhandle_t* zh, const std::vector<std::string>& paths,
                                   std::chrono::milliseconds limit, std::stop_token stop,
                                   fetch_error& err);

}  // namespace dlock::detail::zk
