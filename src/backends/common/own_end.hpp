#pragma once
// Whether the server's view of a connection's client end names this socket's own end: the
// test for a hop between client and server (my_route.hpp, pg_route.cpp). On a direct route the
// server's peer is this very socket; through a proxy, load balancer or NAT it is the hop's.
// Addresses are compared as numbers (IPv4 as IPv4-mapped IPv6, so "127.0.0.1" and
// "::ffff:127.0.0.1" are one); a host the server shows by name matches by its port alone.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstring>
#include <optional>
#include <string>
#include <string_view>

namespace dlock::detail {

// getsockname(2) of `fd`, or nothing if it cannot be read.
inline std::optional<sockaddr_storage> own_end(int fd) {
  sockaddr_storage local{};
  socklen_t len = sizeof local;
  if (fd < 0 || ::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) != 0) return {};
  return local;
}

namespace own_end_detail {

inline in6_addr mapped(const in_addr& v4) {
  in6_addr a{};
  a.s6_addr[10] = a.s6_addr[11] = 0xff;
  std::memcpy(&a.s6_addr[12], &v4, 4);
  return a;
}

// `host` as an address, if it is a numeric one ("[...]" around IPv6 allowed).
inline std::optional<in6_addr> numeric(std::string_view host) {
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  const std::string text(host);
  in_addr v4{};
  if (::inet_pton(AF_INET, text.c_str(), &v4) == 1) return mapped(v4);
  in6_addr v6{};
  if (::inet_pton(AF_INET6, text.c_str(), &v6) == 1) return v6;
  return {};
}

}  // namespace own_end_detail

// True when (`host`, `port`), as the server shows the client's end, is the TCP socket end
// `local`. Any other family (a Unix socket) is the caller's to judge: false here.
inline bool names_own_end(std::string_view host, unsigned port, const sockaddr_storage& local) {
  in6_addr mine{};
  unsigned my_port = 0;
  if (local.ss_family == AF_INET) {
    const auto& a = reinterpret_cast<const sockaddr_in&>(local);
    my_port = ntohs(a.sin_port);
    mine = own_end_detail::mapped(a.sin_addr);
  } else if (local.ss_family == AF_INET6) {
    const auto& a = reinterpret_cast<const sockaddr_in6&>(local);
    my_port = ntohs(a.sin6_port);
    mine = a.sin6_addr;
  } else {
    return false;
  }
  if (port != my_port) return false;
  auto seen = own_end_detail::numeric(host);
  return !seen || std::memcmp(&*seen, &mine, sizeof mine) == 0;  // a name: the port decides
}

}  // namespace dlock::detail
