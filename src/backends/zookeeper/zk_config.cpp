#include "backends/zookeeper/zk_config.hpp"

#include <netdb.h>
#include <sys/socket.h>

#include <algorithm>
#include <string>

#include "core/duration.hpp"

namespace dlock::detail::zk {
namespace {

// `key`'s duration, at least `least`: a zero or near-zero timeout passed as is failed seconds
// later as an unreachable server ("no session within 0 ms"), a tester found.
result<std::chrono::milliseconds> duration_param(const url& u, std::string_view key,
                                                 std::chrono::milliseconds fallback,
                                                 std::chrono::milliseconds least) {
  auto v = u.param(key);
  if (v.empty()) return fallback;
  auto d = parse_duration(v);
  if (!d) {
    return fail(errc::invalid_argument,
                "URL '" + u.redacted + "': " + std::string(key) + ": " + d.error().message);
  }
  if (*d < least) {
    return fail(errc::invalid_argument, "URL '" + u.redacted + "': " + std::string(key) + "=" + v +
                                            " is too short (at least " + format_duration(least) +
                                            ")");
  }
  return *d;
}

// Why ZooKeeper would refuse `path` as a node path prefix, or empty if it is fine.
std::string bad_chroot(const std::string& path) {
  // ZooKeeper's own subtree (quotas, the ensemble's config): locks there were accepted and
  // mixed with the server's nodes (a tester's zk://host/zookeeper).
  if (path == "/zookeeper" || path.starts_with("/zookeeper/"))
    return "is in ZooKeeper's reserved /zookeeper subtree";
  std::size_t start = 1;
  while (start <= path.size()) {
    auto end = path.find('/', start);
    if (end == std::string::npos) end = path.size();
    auto segment = path.substr(start, end - start);
    if (segment.empty()) return "has an empty segment ('//')";
    if (segment == "." || segment == "..") return "has a '.' or '..' segment";
    for (unsigned char ch : segment) {
      if (ch < 0x20 || ch == 0x7f) return "contains a control character";
    }
    start = end + 1;
  }
  return {};
}

}  // namespace

result<zk_url> parse_url(const url& u, const session_info& info) {
  if (u.hosts.empty()) {
    return fail(errc::invalid_argument,
                "URL '" + u.redacted + "': want zk://host:2181[,host:2181...][/chroot]");
  }
  zk_url out;
  auto& cfg = out.client;
  for (auto& h : u.hosts) {
    if (!cfg.hosts.empty()) cfg.hosts += ',';
    cfg.hosts += h.host + ":" + std::to_string(h.port != 0 ? h.port : 2181);
  }
  // As a TTL (session_options' check): the lease.
  auto timeout = duration_param(u, "session_timeout", info.ttl, std::chrono::milliseconds{10});
  if (!timeout) return fail(timeout.error());
  // Both set the lease; preferring one silently ran a tester's `--ttl 30s` with
  // `session_timeout=6s` on a 6 s lease.
  if (info.ttl_given && !u.param("session_timeout").empty() && *timeout != info.ttl) {
    return fail(errc::invalid_argument,
                "URL '" + u.redacted + "': session_timeout=" + u.param("session_timeout") +
                    " and " +
                    (u.param("ttl").empty()
                         ? "the ttl " + format_duration(info.ttl) + " (session_options::ttl)"
                         : "ttl=" + std::string(u.param("ttl"))) +
                    " both set the session timeout; give one, or the same value in both");
  }
  auto connect =
      duration_param(u, "connect_timeout", info.request_timeout, std::chrono::milliseconds{1});
  if (!connect) return fail(connect.error());
  cfg.session_timeout = *timeout;
  cfg.connect_timeout = *connect;
  cfg.request_timeout = info.request_timeout;
  if (!u.user.empty()) cfg.credentials = u.user + ":" + u.password;
  std::string& chroot = out.chroot;
  chroot = u.path;
  while (!chroot.empty() && chroot.back() == '/') chroot.pop_back();
  // ZooKeeper refuses such paths only later, on the first request, as "bad arguments".
  if (auto bad = bad_chroot(chroot); !bad.empty()) {
    return fail(errc::invalid_argument, "URL '" + u.redacted + "': chroot '" + chroot + "' " + bad);
  }
  out.secure = !u.user.empty();
  if (auto names = u.param("mutex_names"); names == "writer") {
    out.mutex_as_writer = true;
  } else if (!names.empty() && names != "curator") {
    return fail(errc::invalid_argument, "URL '" + u.redacted + "': mutex_names '" + names +
                                            "': want curator (the default) or writer");
  }
  return out;
}

std::string unresolved(const std::string& hosts) {
  std::size_t from = 0;
  while (from <= hosts.size()) {
    auto to = std::min(hosts.find(',', from), hosts.size());
    std::string hp = hosts.substr(from, to - from);
    from = to + 1;
    auto colon = hp.rfind(':');
    std::string host = colon == std::string::npos ? hp : hp.substr(0, colon);
    std::string port = colon == std::string::npos ? "2181" : hp.substr(colon + 1);
    if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
      host = host.substr(1, host.size() - 2);
    }
    addrinfo hints{};
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* found = nullptr;
    int rc = ::getaddrinfo(host.c_str(), port.c_str(), &hints, &found);
    if (found) ::freeaddrinfo(found);
    if (rc != 0) return "cannot resolve " + host + ": " + ::gai_strerror(rc);
  }
  return {};
}

}  // namespace dlock::detail::zk
