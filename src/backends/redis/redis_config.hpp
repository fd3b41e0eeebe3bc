#pragma once
// What a redis:// or redlock:// URL says: the servers, credentials, database and key prefix.

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
  std::vector<target> servers;  // one for redis://, an odd number >= 3 for redlock://
  std::string prefix;           // prepended to every key
  std::string redacted;         // the URL without its password
};

// invalid_argument naming the part of the URL that is wrong.
result<config> parse_config(const url& u, std::chrono::milliseconds timeout);

}  // namespace dlock::detail::redis
