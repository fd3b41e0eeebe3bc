#include "cli/bench/bench_probe.hpp"

#include <netdb.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include <cstdlib>
#include <sstream>
#include <string_view>

namespace dlock::cli {
namespace {

// A blocking TCP connection with a 2 s bound on every read and write.
class tcp {
 public:
  tcp(const std::string& host, int port) {
    addrinfo hints{};
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* res = nullptr;
    if (getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res) != 0) return;
    for (auto* a = res; a && fd_ < 0; a = a->ai_next) {
      int fd = ::socket(a->ai_family, a->ai_socktype, a->ai_protocol);
      if (fd < 0) continue;
      timeval tv{2, 0};
      setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
      setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
      if (::connect(fd, a->ai_addr, a->ai_addrlen) == 0) {
        fd_ = fd;
      } else {
        ::close(fd);
      }
    }
    freeaddrinfo(res);
  }
  ~tcp() {
    if (fd_ >= 0) ::close(fd_);
  }
  tcp(const tcp&) = delete;
  tcp& operator=(const tcp&) = delete;
  bool ok() const { return fd_ >= 0; }
  bool send(std::string_view s) {
    while (!s.empty()) {
      auto n = ::write(fd_, s.data(), s.size());
      if (n <= 0) return false;
      s.remove_prefix(static_cast<std::size_t>(n));
    }
    return true;
  }
  // Reads until `want` bytes are buffered (or EOF when want is npos). Bounded: 16 MiB.
  bool fill(std::size_t want) {
    char buf[8192];
    while (buf_.size() < want && buf_.size() < (16u << 20)) {
      auto n = ::read(fd_, buf, sizeof buf);
      if (n <= 0) return want == std::string::npos;
      buf_.append(buf, static_cast<std::size_t>(n));
    }
    return buf_.size() >= want;
  }
  std::optional<std::string> line() {
    for (int i = 0; i < 1000; ++i) {
      if (auto p = buf_.find("\r\n"); p != std::string::npos) {
        auto l = buf_.substr(0, p);
        buf_.erase(0, p + 2);
        return l;
      }
      if (!fill(buf_.size() + 1)) return std::nullopt;
    }
    return std::nullopt;
  }
  std::string& buffer() { return buf_; }

 private:
  int fd_{-1};
  std::string buf_;
};

std::string resp(std::initializer_list<std::string_view> args) {
  std::string s = "*" + std::to_string(args.size()) + "\r\n";
  for (auto a : args) s += "$" + std::to_string(a.size()) + "\r\n" + std::string(a) + "\r\n";
  return s;
}

// One RESP reply as text: a bulk string's body, or a status line.
std::optional<std::string> read_reply(tcp& c) {
  auto l = c.line();
  if (!l || l->empty()) return std::nullopt;
  if ((*l)[0] != '$') return (*l)[0] == '-' ? std::nullopt : std::optional(l->substr(1));
  long n = std::atol(l->c_str() + 1);
  if (n < 0 || !c.fill(static_cast<std::size_t>(n) + 2)) return std::nullopt;
  auto body = c.buffer().substr(0, static_cast<std::size_t>(n));
  c.buffer().erase(0, static_cast<std::size_t>(n) + 2);
  return body;
}

// The number after `key` up to the next separator in `text`.
std::optional<double> field(std::string_view text, std::string_view key) {
  auto p = text.find(key);
  if (p == std::string_view::npos) return std::nullopt;
  return std::strtod(std::string(text.substr(p + key.size(), 32)).c_str(), nullptr);
}

std::optional<double> file_size(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  return static_cast<double>(st.st_size);
}

}  // namespace

backend_probe::backend_probe(std::string url) {
  auto sep = url.find("://");
  if (sep == std::string::npos) return;
  scheme_ = url.substr(0, sep);
  auto rest = url.substr(sep + 3);
  if (auto q = rest.find('?'); q != std::string::npos) rest.resize(q);
  auto slash = rest.find('/');
  auto authority = rest.substr(0, slash);
  path_ = slash == std::string::npos ? "" : rest.substr(slash);
  if (auto at = authority.rfind('@'); at != std::string::npos) {
    auto userinfo = authority.substr(0, at);
    authority.erase(0, at + 1);
    auto colon = userinfo.find(':');
    user_ = userinfo.substr(0, colon);
    if (colon != std::string::npos) password_ = userinfo.substr(colon + 1);
  }
  authority = authority.substr(0, authority.find(','));
  auto colon = authority.rfind(':');
  host_ = authority.substr(0, colon);
  if (colon != std::string::npos) port_ = std::atoi(authority.c_str() + colon + 1);
  // Redlock: its first master (every master serves each request once).
  if (scheme_ == "redlock") scheme_ = "redis";
  if (port_ == 0) {
    port_ = scheme_ == "redis" ? 6379 : scheme_ == "zk" ? 2181 : scheme_ == "etcd" ? 2379 : 0;
  }
}

std::string backend_probe::requests_name() const {
  if (scheme_ == "redis") return "redis commands (INFO commandstats)";
  if (scheme_ == "zk") return "ZooKeeper packets received (mntr)";
  if (scheme_ == "etcd") return "etcd gRPC calls and streams started (/metrics)";
  return {};
}

std::string backend_probe::memory_name() const {
  if (scheme_ == "redis") return "redis used_memory (INFO memory)";
  if (scheme_ == "zk") return "ZooKeeper zk_approximate_data_size (mntr)";
  if (scheme_ == "sqlite") return "SQLite database + WAL file size";
  return {};
}

server_counters backend_probe::read() const {
  server_counters out;
  if (scheme_ == "sqlite") {
    auto main = file_size(path_);
    if (main) out.memory_bytes = *main + file_size(path_ + "-wal").value_or(0);
    return out;
  }
  if (scheme_ != "redis" && scheme_ != "zk" && scheme_ != "etcd") return out;
  tcp c(host_, port_);
  if (!c.ok()) return out;
  if (scheme_ == "etcd") {
    // The member's Prometheus text on its client port (plain etcd:// only). HTTP/1.0: the
    // body comes whole, not chunked, and ends at EOF.
    if (!c.send("GET /metrics HTTP/1.0\r\nHost: " + host_ + "\r\n\r\n") ||
        !c.fill(std::string::npos)) {
      return out;
    }
    double total = 0;
    bool seen = false;
    std::istringstream lines(c.buffer());
    for (std::string l; std::getline(lines, l);) {
      if (!l.starts_with("grpc_server_started_total{")) continue;
      auto sp = l.rfind(' ');
      if (sp == std::string::npos) continue;
      total += std::strtod(l.c_str() + sp + 1, nullptr);
      seen = true;
    }
    if (seen) out.requests = total;
    return out;
  }
  if (scheme_ == "zk") {
    if (!c.send("mntr") || !c.fill(std::string::npos)) return out;
    out.requests = field(c.buffer(), "zk_packets_received\t");
    out.memory_bytes = field(c.buffer(), "zk_approximate_data_size\t");
    return out;
  }
  if (!password_.empty()) {
    c.send(user_.empty() ? resp({"AUTH", password_}) : resp({"AUTH", user_, password_}));
    if (!read_reply(c)) return out;
  }
  c.send(resp({"INFO", "commandstats"}));
  if (auto info = read_reply(c)) {
    // Every command but the probe's own INFO and AUTH.
    double total = 0;
    std::istringstream lines(*info);
    for (std::string l; std::getline(lines, l);) {
      if (!l.starts_with("cmdstat_") || l.starts_with("cmdstat_info:") ||
          l.starts_with("cmdstat_auth:")) {
        continue;
      }
      total += field(l, "calls=").value_or(0);
    }
    out.requests = total;
  }
  c.send(resp({"INFO", "memory"}));
  if (auto info = read_reply(c)) out.memory_bytes = field(*info, "used_memory:");
  return out;
}

}  // namespace dlock::cli
