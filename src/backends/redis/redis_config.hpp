#pragma once
// What a redis://, redis-sentinel:// or redlock:// URL says: the servers (or the sentinels that
// name the master), credentials, database, key prefix and the replicas a write must reach.

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "core/result.hpp"
#include "core/url.hpp"

namespace dlock::detail::redis {

// One server and how to log in to it.
struct target {
  std::string host;
  std::uint16_t port{6379};
  std::string user;  // Redis 6 ACL user; empty: the default user
  std::string password;
  bool has_password{false};
  int db{0};
  std::chrono::milliseconds timeout{};  // connect and command timeout
  std::string where;                    // "redis 127.0.0.1:6379", for messages
};

struct config {
  // One for redis:// and redis-sentinel:// (there: the master's credentials and database; its
  // address comes from the sentinels), an odd number >= 3 for redlock://.
  std::vector<target> servers;
  std::vector<target> sentinels;  // redis-sentinel:// only
  std::string master_name;        // redis-sentinel://.../NAME
  // ?replicas=N: an acquire or renewal counts only once N replicas acknowledged it (WAIT),
  // within replica_timeout.
  int replicas{0};
  std::chrono::milliseconds replica_timeout{1000};
  std::string prefix;    // prepended to every key
  std::string redacted;  // the URL without its password
};

// invalid_argument naming the part of the URL that is wrong.
result<config> parse_config(const url& u, std::chrono::milliseconds timeout);

}  // namespace dlock::detail::redis
