#include "backends/redis/redis_config.hpp"

#include <netdb.h>
#include <sys/socket.h>

#include <charconv>
#include <set>

#include "core/duration.hpp"
#include "core/url.hpp"

namespace dlock::detail::redis {
namespace {

// Every address `host` resolves to, as text; empty if it does not resolve (the connection
// will report that with its own words).
std::set<std::string> addresses(const std::string& host) {
  std::set<std::string> out;
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (getaddrinfo(host.c_str(), nullptr, &hints, &res) != 0) return out;
  for (auto* a = res; a; a = a->ai_next) {
    char text[NI_MAXHOST];
    if (getnameinfo(a->ai_addr, a->ai_addrlen, text, sizeof text, nullptr, 0, NI_NUMERICHOST) == 0)
      out.insert(text);
  }
  freeaddrinfo(res);
  return out;
}

// Redlock's safety rests on independent masters: the same server named twice (or under two
// names) would count one vote as two.
std::string duplicate_server(const url& u) {
  std::vector<std::pair<std::set<std::string>, std::uint16_t>> seen;
  for (const auto& hp : u.hosts) {
    auto port = hp.port == 0 ? std::uint16_t{6379} : hp.port;
    auto addrs = addresses(hp.host);
    if (addrs.empty()) addrs.insert(hp.host);
    for (std::size_t i = 0; i < seen.size(); ++i) {
      if (seen[i].second != port) continue;
      for (const auto& a : addrs) {
        if (seen[i].first.contains(a)) {
          return host_port_text(u.hosts[i].host, port) + " and " + host_port_text(hp.host, port) +
                 " (both " + a + ")";
        }
      }
    }
    seen.emplace_back(std::move(addrs), port);
  }
  return {};
}

// ?replicas=N&replica_timeout=T (redis:// and redis-sentinel:// only: the plug-in's parameter
// lists refuse them elsewhere).
result<void> parse_replicas(const url& u, std::chrono::milliseconds timeout, config& c) {
  auto bad = [&](const std::string& why) {
    return fail(errc::invalid_argument, "URL '" + u.redacted + "': " + why);
  };
  if (auto it = u.query.find("replicas"); it != u.query.end()) {
    const auto& text = it->second;
    auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), c.replicas);
    if (text.empty() || ec != std::errc{} || p != text.data() + text.size() || c.replicas < 0)
      return bad("replicas '" + text + "' is not a non-negative integer (want replicas=1)");
  }
  if (auto it = u.query.find("replica_timeout"); it != u.query.end()) {
    auto d = parse_duration(it->second);
    if (!d) return bad("replica_timeout: " + d.error().message);
    if (d->count() <= 0) return bad("replica_timeout must be greater than zero");
    c.replica_timeout = *d;
  } else {
    c.replica_timeout = std::min(c.replica_timeout, timeout / 2);
  }
  // WAIT blocks the connection for up to replica_timeout: the request must outlast it.
  if (c.replica_timeout >= timeout) {
    return bad("replica_timeout " + format_duration(c.replica_timeout) +
               " must be below the request timeout " + format_duration(timeout));
  }
  return {};
}

// redis-sentinel://s1:26379,s2:26379/NAME[/db]: the hosts are sentinels, the path names the
// master they monitor (and the database on it).
result<void> parse_sentinel(const url& u, config& c, int& db) {
  auto bad = [&](const std::string& why) {
    return fail(errc::invalid_argument, "URL '" + u.redacted + "': " + why);
  };
  auto path = std::string_view(u.path);
  if (path.starts_with('/')) path.remove_prefix(1);
  auto slash = path.find('/');
  c.master_name = std::string(path.substr(0, slash));
  if (c.master_name.empty())
    return bad("no master name (want redis-sentinel://host:26379,.../mymaster)");
  if (slash != std::string_view::npos) {
    auto digits = path.substr(slash + 1);
    auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), db);
    if (digits.empty() || ec != std::errc{} || p != digits.data() + digits.size() || db < 0)
      return bad("database '" + std::string(digits) + "' is not a number (want /mymaster/0)");
  }
  for (const auto& hp : u.hosts) {
    target t;
    t.host = hp.host;
    t.port = hp.port == 0 ? 26379 : hp.port;
    t.where = "redis sentinel " + host_port_text(t.host, t.port);
    c.sentinels.push_back(std::move(t));
  }
  return {};
}

}  // namespace

result<config> parse_config(const url& u, std::chrono::milliseconds timeout) {
  auto bad = [&](const std::string& why) {
    return fail(errc::invalid_argument, "URL '" + u.redacted + "': " + why);
  };
  const bool redlock = u.scheme == "redlock";
  const bool sentinel = u.scheme == "redis-sentinel";
  if (u.hosts.empty()) return bad("no host (want " + u.scheme + "://host:port...)");
  if (!redlock && !sentinel && u.hosts.size() != 1) {
    return bad("redis:// takes one server; use redlock://h1:p1,h2:p2,h3:p3 for several");
  }
  if (redlock && (u.hosts.size() < 3 || u.hosts.size() % 2 == 0)) {
    return bad("redlock:// needs an odd number (at least 3) of independent servers, got " +
               std::to_string(u.hosts.size()));
  }
  if (redlock) {
    if (auto dup = duplicate_server(u); !dup.empty())
      return bad("redlock:// names one server twice: " + dup + "; its masters must be independent");
  }
  config c;
  int db = 0;
  if (sentinel) {
    if (auto r = parse_sentinel(u, c, db); !r) return fail(r.error());
  } else if (!u.path.empty() && u.path != "/") {
    auto digits = std::string_view(u.path).substr(1);
    auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), db);
    if (ec != std::errc{} || p != digits.data() + digits.size() || db < 0) {
      return bad("database '" + std::string(digits) + "' is not a number (want /0, /1, ...)");
    }
  }
  if (!u.user.empty() && !u.has_password) return bad("user '" + u.user + "' without a password");
  if (auto r = parse_replicas(u, timeout, c); !r) return fail(r.error());
  c.prefix = u.param("prefix", "dlock:");
  for (char ch : c.prefix) {
    if (static_cast<unsigned char>(ch) < 0x20) return bad("prefix contains a control character");
  }
  c.redacted = u.redacted;
  for (auto& t : c.sentinels) t.timeout = timeout;
  auto add = [&](const std::string& host, std::uint16_t port) {
    target t;
    t.host = host;
    t.port = port;
    t.user = u.user;
    t.password = u.password;
    t.has_password = u.has_password;
    t.db = db;
    t.timeout = timeout;
    t.where = "redis " + host_port_text(t.host, t.port);
    c.servers.push_back(std::move(t));
  };
  if (sentinel) {
    add("", 0);  // the address comes from the sentinels at each connect
    c.servers.back().where = "redis master '" + c.master_name + "'";
    return c;
  }
  for (const auto& hp : u.hosts) add(hp.host, hp.port == 0 ? 6379 : hp.port);
  return c;
}

}  // namespace dlock::detail::redis
