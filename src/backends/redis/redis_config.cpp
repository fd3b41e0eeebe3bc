#include "backends/redis/redis_config.hpp"

#include <charconv>

namespace dlock::detail::redis {

result<config> parse_config(const url& u, std::chrono::milliseconds timeout) {
  auto bad = [&](const std::string& why) {
    return fail(errc::invalid_argument, "URL '" + u.redacted + "': " + why);
  };
  const bool redlock = u.scheme == "redlock";
  if (u.hosts.empty()) return bad("no host (want " + u.scheme + "://host:port...)");
  if (!redlock && u.hosts.size() != 1) {
    return bad("redis:// takes one server; use redlock://h1:p1,h2:p2,h3:p3 for several");
  }
  if (redlock && (u.hosts.size() < 3 || u.hosts.size() % 2 == 0)) {
    return bad("redlock:// needs an odd number (at least 3) of independent servers, got " +
               std::to_string(u.hosts.size()));
  }
  int db = 0;
  if (!u.path.empty() && u.path != "/") {
    auto digits = std::string_view(u.path).substr(1);
    auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), db);
    if (ec != std::errc{} || p != digits.data() + digits.size() || db < 0) {
      return bad("database '" + std::string(digits) + "' is not a number (want /0, /1, ...)");
    }
  }
  if (!u.user.empty() && !u.has_password) return bad("user '" + u.user + "' without a password");
  config c;
  c.prefix = u.param("prefix", "dlock:");
  for (char ch : c.prefix) {
    if (static_cast<unsigned char>(ch) < 0x20) return bad("prefix contains a control character");
  }
  c.redacted = u.redacted;
  for (const auto& hp : u.hosts) {
    target t;
    t.host = hp.host;
    t.port = hp.port == 0 ? 6379 : hp.port;
    t.user = u.user;
    t.password = u.password;
    t.has_password = u.has_password;
    t.db = db;
    t.timeout = timeout;
    t.where = "redis " + t.host + ":" + std::to_string(t.port);
    c.servers.push_back(std::move(t));
  }
  return c;
}

}  // namespace dlock::detail::redis
