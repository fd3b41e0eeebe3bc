#pragma once
// Whether the server sees this connection's own end (issue: a hop that closes only the
// server's side). The server frees what a connection holds (its named locks: the session's,
// the doorbells) when its side of the connection ends, and the client learns of that end from
// its own socket. On a direct route the two ends are one TCP connection, and the client's
// kernel hears the server's FIN or RST. Through a hop (a TCP proxy, a load balancer, a NAT
// whose state timed out), the hop may end the server's side and leave the client's open and
// silent: the server has freed the session's locks and let another client in, while the holder
// believes it holds until its next request times out -- two holders for seconds (a tester's
// proxy: 3.9 s with a 6 s TTL). A session on such a route is therefore lease-only: its row
// names no connection, its entries leave with their rows, and only its lease frees them.
//
// The test: the server's PROCESSLIST row for this connection gives the client's end as it
// sees it ("host:port"); on a direct route that is this socket's local address. The address
// is compared only when the server shows it as a number (skip_name_resolve off shows
// 'localhost:48844'); the port always.

#include <sys/socket.h>

#include <string_view>

#include "backends/mysql/my_conn.hpp"

namespace dlock::detail::my {

// True when `host_column` (PROCESSLIST's HOST of this connection) names the socket end
// `local` (getsockname of the client's socket). A Unix socket's row ('localhost', no port) is
// direct; anything that cannot be read is not.
bool seen_as_self(std::string_view host_column, const sockaddr_storage& local);

// Whether `c` reaches the server directly (seen_as_self on its own row). A failed read of the
// row is an error; the caller decides.
result<bool> direct_route(conn& c);

}  // namespace dlock::detail::my
