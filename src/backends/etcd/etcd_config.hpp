#pragma once
// etcd://host1:2379,host2:2379[/prefix]?ttl=10s -- parsed into what the client needs.

#include <chrono>
#include <string>

#include "core/backend.hpp"
#include "core/url.hpp"

namespace dlock::detail::etcd {

struct config {
  std::string target;  // a gRPC target: "ipv4:127.0.0.1:2379,127.0.0.1:2479" or "dns:///h:2379"
  std::string base;    // "" or "prefix/": keys are base + NAME + "/" + lease hex
  std::chrono::milliseconds request_timeout{};
};

// invalid_argument for a malformed URL; unsupported for what this version refuses (etcds://,
// credentials, several host names).
result<config> parse_config(const url& u, const session_info& info);

}  // namespace dlock::detail::etcd
