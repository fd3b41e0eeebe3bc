#include "backends/etcd/etcd_config.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

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

// A PEM file's contents; the failure names the parameter and the file.
result<std::string> read_pem(const std::string& where, std::string_view param,
                             const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const int e = errno;
    return fail(
        e == EACCES ? errc::permission_denied : errc::invalid_argument,
        where + std::string(param) + " file '" + path + "' cannot be read: " + std::strerror(e));
  }
  std::stringstream buf;
  buf << in.rdbuf();
  std::string pem = buf.str();
  if (pem.find("-----BEGIN ") == std::string::npos) {
    return fail(errc::invalid_argument,
                where + std::string(param) + " file '" + path + "' is not PEM");
  }
  // A key given as the CA (or the reverse) is PEM too; gRPC would then fail every call with
  // "empty address list", naming neither the parameter nor the file.
  const bool key = param == "key";
  if (pem.find(key ? "PRIVATE KEY-----" : "-----BEGIN CERTIFICATE-----") == std::string::npos) {
    return fail(errc::invalid_argument, where + std::string(param) + " file '" + path +
                                            "' holds no " + (key ? "private key" : "certificate"));
  }
  return pem;
}

// The addresses of one member, of one family (AF_INET or AF_INET6), as gRPC target entries;
// AF_UNSPEC only checks that it resolves (no entries).
result<std::vector<std::string>> resolve(const std::string& where, const std::string& host,
                                         const std::string& port, int family) {
  addrinfo hints{};
  hints.ai_family = family;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  int rc = getaddrinfo(host.c_str(), port.c_str(), &hints, &res);
  if (rc != 0) {
    return fail(errc::backend_unavailable,
                where + "member '" + host + "' does not resolve: " + gai_strerror(rc));
  }
  std::vector<std::string> out;
  for (auto* a = family == AF_UNSPEC ? nullptr : res; a != nullptr; a = a->ai_next) {
    char text[INET6_ADDRSTRLEN] = {};
    const void* src =
        family == AF_INET
            ? static_cast<const void*>(&reinterpret_cast<sockaddr_in*>(a->ai_addr)->sin_addr)
            : &reinterpret_cast<sockaddr_in6*>(a->ai_addr)->sin6_addr;
    if (inet_ntop(family, src, text, sizeof text) == nullptr) continue;
    std::string e = family == AF_INET ? std::string(text) : "[" + std::string(text) + "]";
    e += ":" + port;
    if (std::find(out.begin(), out.end(), e) == out.end()) out.push_back(e);
  }
  freeaddrinfo(res);
  return out;
}

// Several members, some by name: gRPC's dns: resolver takes one name per channel, so the names
// are resolved here, once, into an ipv4: (else ipv6:) address list that gRPC fails over in.
result<std::string> resolve_members(const std::string& where, const url& u) {
  auto port = [](const host_port& h) { return std::to_string(h.port != 0 ? h.port : 2379); };
  // First whether each member resolves at all, of any family: a name that does not is the one
  // to report, not a member that merely lacks an IPv6 address (the second pass below).
  for (const auto& h : u.hosts) {
    if (auto a = resolve(where, h.host, port(h), AF_UNSPEC); !a) return fail(a.error());
  }
  for (int family : {AF_INET, AF_INET6}) {
    std::string target = family == AF_INET ? "ipv4:" : "ipv6:";
    bool all = true;
    for (const auto& h : u.hosts) {
      auto a = resolve(where, h.host, port(h), family);
      if (!a || a->empty()) {
        all = false;
        break;
      }
      for (const auto& e : *a) target += (target.back() == ':' ? "" : ",") + e;
    }
    if (all) return target;
  }
  return fail(errc::unsupported,
              where + "the members resolve to no common address family (IPv4 for all, or IPv6)");
}

}  // namespace

result<config> parse_config(const url& u, const session_info& info) {
  const std::string where = "URL '" + u.redacted + "': ";
  if (u.hosts.empty()) {
    return fail(errc::invalid_argument, where + "want etcd://host:2379[,host:2379...][/prefix]");
  }
  config c;
  c.where = u.redacted;
  c.request_timeout = info.request_timeout;
  c.ping_after = info.ttl / 3 + std::chrono::seconds{1};
  if (!u.user.empty()) {
    if (!u.has_password) {
      return fail(errc::invalid_argument, where + "user '" + u.user + "' without a password");
    }
    c.user = u.user;
    c.password = u.password;
  }
  if (u.scheme == "etcds") {
    c.tls = true;
    const std::string ca = u.param("cacert"), cert = u.param("cert"), key = u.param("key");
    if (!cert.empty() && key.empty()) {
      return fail(errc::invalid_argument,
                  where + "cert given without key (client auth needs both)");
    }
    if (cert.empty() && !key.empty()) {
      return fail(errc::invalid_argument,
                  where + "key given without cert (client auth needs both)");
    }
    if (!ca.empty()) {
      auto p = read_pem(where, "cacert", ca);
      if (!p) return fail(p.error());
      c.ca_pem = std::move(*p);
      c.ca_file = ca;
    }
    if (!cert.empty()) {
      auto pc = read_pem(where, "cert", cert);
      if (!pc) return fail(pc.error());
      auto pk = read_pem(where, "key", key);
      if (!pk) return fail(pk.error());
      c.cert_pem = std::move(*pc);
      c.key_pem = std::move(*pk);
    }
  }
  auto port = [](const host_port& h) { return std::to_string(h.port != 0 ? h.port : 2379); };
  const auto& first = u.hosts.front();
  c.authority = (is_ipv6(first.host) ? "[" + first.host + "]" : first.host) + ":" + port(first);
  // Several members: gRPC's ipv4:/ipv6: targets take a list of addresses and fail over
  // between them (pick_first); its dns: resolver takes one name only.
  bool v4 = true, v6 = true;
  for (auto& h : u.hosts) {
    v4 = v4 && is_ipv4(h.host);
    v6 = v6 && is_ipv6(h.host);
  }
  if (v4 || v6) {
    c.target = v4 ? "ipv4:" : "ipv6:";
    for (std::size_t i = 0; i < u.hosts.size(); ++i) {
      if (i != 0) c.target += ',';
      c.target += v4 ? u.hosts[i].host : "[" + u.hosts[i].host + "]";
      c.target += ":" + port(u.hosts[i]);
    }
  } else if (u.hosts.size() == 1) {
    // One name: gRPC resolves it, again after a lost connection.
    c.target = "dns:///" + c.authority;
  } else {
    auto t = resolve_members(where, u);
    if (!t) return fail(t.error());
    c.target = std::move(*t);
  }
  std::string p = u.path;
  while (!p.empty() && p.front() == '/') p.erase(p.begin());
  while (!p.empty() && p.back() == '/') p.pop_back();
  // A key prefix is a path other tools (etcdctl, Go's concurrency package) show and type: a
  // control character in it (%00 was accepted, a tester's) is a mistyped URL.
  for (unsigned char ch : p) {
    if (ch < 0x20 || ch == 0x7f) {
      return fail(errc::invalid_argument, where + "the key prefix contains a control character");
    }
  }
  if (!p.empty()) c.base = p + "/";
  return c;
}

}  // namespace dlock::detail::etcd
