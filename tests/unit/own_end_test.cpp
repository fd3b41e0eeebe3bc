// The route check's comparison (backends/common/own_end.hpp): the server's view of a
// connection's client end against the socket's own, as MariaDB and PostgreSQL show it.
#include "backends/common/own_end.hpp"

#include <gtest/gtest.h>

namespace dlock::detail {
namespace {

sockaddr_storage v4(const char* addr, unsigned port) {
  sockaddr_storage ss{};
  auto& a = reinterpret_cast<sockaddr_in&>(ss);
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  ::inet_pton(AF_INET, addr, &a.sin_addr);
  return ss;
}

sockaddr_storage v6(const char* addr, unsigned port) {
  sockaddr_storage ss{};
  auto& a = reinterpret_cast<sockaddr_in6&>(ss);
  a.sin6_family = AF_INET6;
  a.sin6_port = htons(static_cast<std::uint16_t>(port));
  ::inet_pton(AF_INET6, addr, &a.sin6_addr);
  return ss;
}

TEST(own_end, the_same_address_and_port_in_any_spelling_is_this_socket) {
  EXPECT_TRUE(names_own_end("127.0.0.1", 40000, v4("127.0.0.1", 40000)));
  EXPECT_TRUE(names_own_end("::ffff:127.0.0.1", 40000, v4("127.0.0.1", 40000)));
  EXPECT_TRUE(names_own_end("127.0.0.1", 40000, v6("::ffff:127.0.0.1", 40000)));
  EXPECT_TRUE(names_own_end("[::1]", 40000, v6("::1", 40000)));
  EXPECT_TRUE(names_own_end("0:0:0:0:0:0:0:1", 40000, v6("::1", 40000)));
}

TEST(own_end, another_port_or_address_is_a_hop) {
  EXPECT_FALSE(names_own_end("127.0.0.1", 40001, v4("127.0.0.1", 40000)));
  EXPECT_FALSE(names_own_end("127.0.0.2", 40000, v4("127.0.0.1", 40000)));
  EXPECT_FALSE(names_own_end("::1", 40000, v4("127.0.0.1", 40000)));
}

TEST(own_end, a_host_shown_by_name_is_judged_by_its_port) {
  EXPECT_TRUE(names_own_end("localhost", 40000, v4("127.0.0.1", 40000)));
  EXPECT_FALSE(names_own_end("localhost", 40001, v4("127.0.0.1", 40000)));
}

TEST(own_end, a_socket_of_another_family_is_not_judged_here) {
  sockaddr_storage unix_end{};
  unix_end.ss_family = AF_UNIX;
  EXPECT_FALSE(names_own_end("127.0.0.1", 40000, unix_end));
}

}  // namespace
}  // namespace dlock::detail
