#include "backends/etcd/etcd_config.hpp"

#include <arpa/inet.h>

namespace dlock::detail::etcd {
namespace {

bool is_ipv4(const std::string& h) {
  in_addr a{};
  return inet_pton(AF_INET, h.c_str(), &a) == 1;
}
bool is_ipv6(const std::string& h) {
  in6_addr a{};
  return inet_pton(AF_INET6, h.c_str(), &a) == 1;
}

}  // namespace

result<config> parse_config(const url& u, const session_info& info) {
  const std::string where = "URL '" + u.redacted + "': ";
  if (u.scheme == "etcds") {
    return fail(errc::unsupported, where + "TLS (etcds://) is not supported yet; use etcd://");
  }
  if (u.hosts.empty()) {
    return fail(errc::invalid_argument, where + "want etcd://host:2379[,host:2379...][/prefix]");
  }
  if (!u.user.empty()) {
    return fail(errc::unsupported, where + "etcd user authentication is not supported yet");
  }
  config c;
  c.request_timeout = info.request_timeout;
  // Several members: gRPC's ipv4:/ipv6: targets take a list of addresses and fail over
  // between them (pick_first); its dns: resolver takes one name only.
  bool v4 = true, v6 = true;
  for (auto& h : u.hosts) {
    v4 = v4 && is_ipv4(h.host);
    v6 = v6 && is_ipv6(h.host);
  }
  auto port = [](const host_port& h) { return std::to_string(h.port != 0 ? h.port : 2379); };
  if (v4 || v6) {
    c.target = v4 ? "ipv4:" : "ipv6:";
    for (std::size_t i = 0; i < u.hosts.size(); ++i) {
      if (i != 0) c.target += ',';
      c.target += v4 ? u.hosts[i].host : "[" + u.hosts[i].host + "]";
      c.target += ":" + port(u.hosts[i]);
    }
  } else if (u.hosts.size() == 1) {
    c.target = "dns:///" + u.hosts[0].host + ":" + port(u.hosts[0]);
  } else {
    return fail(errc::unsupported,
                where +
                    "several members must be given as IP addresses (gRPC resolves one "
                    "host name per channel)");
  }
  std::string p = u.path;
  while (!p.empty() && p.front() == '/') p.erase(p.begin());
  while (!p.empty() && p.back() == '/') p.pop_back();
  if (!p.empty()) c.base = p + "/";
  return c;
}

}  // namespace dlock::detail::etcd
