#pragma once
// etcd[s]://[user:password@]host1:2379,host2:2379[/prefix]?ttl=10s&cacert=F&cert=F&key=F --
// parsed into what the client needs.

#include <chrono>
#include <string>

#include "core/backend.hpp"
#include "core/url.hpp"

namespace dlock::detail::etcd {

struct config {
  std::string target;     // a gRPC target: "ipv4:127.0.0.1:2379,127.0.0.1:2479" or "dns:///h:2379"
  std::string authority;  // the first member as given ("h:2379"): the name TLS checks
  std::string base;       // "" or "prefix/": keys are base + NAME + "/" + lease hex
  std::chrono::milliseconds request_timeout{};
  // How long the channel may hear nothing from its member before it pings it (etcd_channel):
  // a renewal's interval (TTL/3) and a second, so that a healthy member, which answers every
  // renewal, is never pinged.
  std::chrono::milliseconds ping_after{};
  // etcds://: PEM contents, read at parse time so a missing file is told at open.
  bool tls{false};
  std::string ca_pem, cert_pem, key_pem;  // ca_pem "" = the system's roots
  std::string ca_file;                    // for messages
  // user:password@: etcd's Auth.Authenticate, its token sent with every call.
  std::string user, password;
  // The URL as redacted (no password), for messages.
  std::string where;
};

// invalid_argument for a malformed URL or a missing cert/key half; permission_denied or
// invalid_argument for a PEM file that cannot be read (named); backend_unavailable for a
// member's host name that does not resolve (several members by name are resolved here).
result<config> parse_config(const url& u, const session_info& info);

}  // namespace dlock::detail::etcd
