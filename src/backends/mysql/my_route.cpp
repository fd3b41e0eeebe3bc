#include "backends/mysql/my_route.hpp"

#include <charconv>

#include "backends/common/own_end.hpp"

namespace dlock::detail::my {

bool seen_as_self(std::string_view host_column, const sockaddr_storage& local) {
  if (local.ss_family == AF_UNIX) return host_column.find(':') == std::string_view::npos;
  auto colon = host_column.rfind(':');
  if (colon == std::string_view::npos) return false;
  unsigned seen_port = 0;
  auto digits = host_column.substr(colon + 1);
  auto [end, err] = std::from_chars(digits.data(), digits.data() + digits.size(), seen_port);
  if (err != std::errc{} || end != digits.data() + digits.size()) return false;
  return names_own_end(host_column.substr(0, colon), seen_port, local);
}

result<bool> direct_route(conn& c) {
  auto local = own_end(c.socket());
  if (!local) {
    return fail(errc::backend_unavailable, c.where() + ": cannot read the connection's own end");
  }
  auto r = c.run("SELECT HOST FROM information_schema.PROCESSLIST WHERE ID = CONNECTION_ID()", {});
  if (!r) return fail(r.error());
  if (r->rows.empty()) return false;
  return seen_as_self(r->text(0, 0), *local);
}

}  // namespace dlock::detail::my
