#include "backends/mysql/my_route.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <charconv>
#include <cstring>
#include <string>

namespace dlock::detail::my {
namespace {

// The port of `local`, and its address as 16 bytes (IPv4 as IPv4-mapped IPv6).
bool split(const sockaddr_storage& local, unsigned& port, in6_addr& addr) {
  if (local.ss_family == AF_INET) {
    const auto& a = reinterpret_cast<const sockaddr_in&>(local);
    port = ntohs(a.sin_port);
    std::memset(&addr, 0, sizeof addr);
    addr.s6_addr[10] = addr.s6_addr[11] = 0xff;
    std::memcpy(&addr.s6_addr[12], &a.sin_addr, 4);
    return true;
  }
  if (local.ss_family == AF_INET6) {
    const auto& a = reinterpret_cast<const sockaddr_in6&>(local);
    port = ntohs(a.sin6_port);
    addr = a.sin6_addr;
    return true;
  }
  return false;
}

// `text` as an address, if it is a numeric one.
bool numeric(std::string host, in6_addr& addr) {
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  in_addr v4{};
  if (::inet_pton(AF_INET, host.c_str(), &v4) == 1) {
    std::memset(&addr, 0, sizeof addr);
    addr.s6_addr[10] = addr.s6_addr[11] = 0xff;
    std::memcpy(&addr.s6_addr[12], &v4, 4);
    return true;
  }
  return ::inet_pton(AF_INET6, host.c_str(), &addr) == 1;
}

}  // namespace

bool seen_as_self(std::string_view host_column, const sockaddr_storage& local) {
  if (local.ss_family == AF_UNIX) return host_column.find(':') == std::string_view::npos;
  unsigned port = 0;
  in6_addr mine{};
  if (!split(local, port, mine)) return false;
  auto colon = host_column.rfind(':');
  if (colon == std::string_view::npos) return false;
  unsigned seen_port = 0;
  auto digits = host_column.substr(colon + 1);
  auto [end, err] = std::from_chars(digits.data(), digits.data() + digits.size(), seen_port);
  if (err != std::errc{} || end != digits.data() + digits.size() || seen_port != port) return false;
  in6_addr seen{};
  if (!numeric(std::string(host_column.substr(0, colon)), seen)) return true;  // a name
  return std::memcmp(&seen, &mine, sizeof seen) == 0;
}

result<bool> direct_route(conn& c) {
  sockaddr_storage local{};
  socklen_t len = sizeof local;
  const int fd = c.socket();
  if (fd < 0 || ::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) != 0) {
    return fail(errc::backend_unavailable, c.where() + ": cannot read the connection's own end");
  }
  auto r = c.run("SELECT HOST FROM information_schema.PROCESSLIST WHERE ID = CONNECTION_ID()", {});
  if (!r) return fail(r.error());
  if (r->rows.empty()) return false;
  return seen_as_self(r->text(0, 0), local);
}

}  // namespace dlock::detail::my
