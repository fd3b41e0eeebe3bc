#include "support/net.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <random>
#include <set>
#include <stdexcept>
#include <thread>

namespace dlock::test {

namespace {

bool bindable(std::uint16_t port, std::uint16_t* got) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return false;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(port);
  bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  if (ok && got != nullptr) {
    socklen_t len = sizeof a;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    *got = ntohs(a.sin_port);
  }
  ::close(fd);
  return ok;
}

}  // namespace

std::uint16_t free_port() {
  // Below the kernel's ephemeral range (32768-60999 by default): a port the kernel handed out
  // with bind(0) may be taken by any outgoing connection before the server binds it, and on
  // a busy machine one was. A random pick also keeps parallel fixtures apart.
  // Never the same port twice in one process (an ensemble takes nine at once).
  static std::mutex mu;
  static std::set<std::uint16_t> given;
  static std::mt19937 rng{std::random_device{}()};
  std::lock_guard lk(mu);
  std::uniform_int_distribution<int> pick(20000, 32000);
  for (int i = 0; i < 200; ++i) {
    auto port = static_cast<std::uint16_t>(pick(rng));
    if (!given.contains(port) && bindable(port, nullptr)) {
      given.insert(port);
      return port;
    }
  }
  std::uint16_t port = 0;
  if (!bindable(0, &port)) throw std::runtime_error("free_port: bind failed");
  return port;
}

bool wait_for_port(std::uint16_t port, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(port);
    bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
    ::close(fd);
    if (ok) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds{50});
  }
  return false;
}

temp_dir::temp_dir(const std::string& prefix, temp_kind kind) {
  const char* base = kind == temp_kind::scratch ? std::getenv("TMPDIR") : nullptr;
  std::string tmpl = std::string(base && *base ? base : "/tmp") + "/" + prefix + "-XXXXXX";
  if (!::mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed for " + tmpl);
  path_ = tmpl;
  std::filesystem::permissions(path_, std::filesystem::perms::all);  // servers run as other users
}

temp_dir::~temp_dir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

std::string random_suffix(std::size_t n) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  std::string s;
  for (std::size_t i = 0; i < n; ++i) s += "0123456789abcdef"[rng() % 16];
  return s;
}

}  // namespace dlock::test
