// The fault proxy against a tiny echo server: each mode does what the fault suite relies on.
#include "support/tcp_proxy.hpp"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace dlock::test {
namespace {

using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

// Echoes every byte back; counts the bytes it received (so a test can tell whether a request
// reached the server even when the reply never reached the client).
class echo_server {
 public:
  echo_server() {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&a), len) != 0 || ::listen(fd_, 16) != 0)
      throw std::runtime_error("echo server: cannot listen");
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    thread_ = std::jthread([this](std::stop_token st) { serve(st); });
  }
  ~echo_server() {
    thread_.request_stop();
    thread_.join();
    ::close(fd_);
  }
  std::uint16_t port() const { return port_; }
  std::size_t received() const { return received_.load(); }

 private:
  void serve(std::stop_token st) {
    std::vector<int> clients;
    while (!st.stop_requested()) {
      std::vector<pollfd> fds{{fd_, POLLIN, 0}};
      for (int c : clients) fds.push_back({c, POLLIN, 0});
      if (::poll(fds.data(), fds.size(), 20) <= 0) continue;
      if (fds[0].revents & POLLIN)
        clients.push_back(::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC));
      for (std::size_t i = 1; i < fds.size(); ++i) {
        if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
        char buf[4096];
        auto n = ::read(fds[i].fd, buf, sizeof buf);
        if (n <= 0) {
          ::close(fds[i].fd);
          std::erase(clients, fds[i].fd);
          continue;
        }
        received_ += static_cast<std::size_t>(n);
        (void)!::send(fds[i].fd, buf, static_cast<std::size_t>(n), MSG_NOSIGNAL);
      }
    }
    for (int c : clients) ::close(c);
  }
  int fd_{-1};
  std::uint16_t port_{0};
  std::atomic<std::size_t> received_{0};
  std::jthread thread_;
};

class client {
 public:
  explicit client(std::uint16_t port) : fd_(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(port);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0)
      throw std::runtime_error("client: cannot connect");
  }
  ~client() { ::close(fd_); }
  bool send(const std::string& s) {
    return ::send(fd_, s.data(), s.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(s.size());
  }
  // Reads until `n` bytes arrived; nullopt on timeout, an error (errno kept in error()), or EOF.
  std::optional<std::string> recv(std::size_t n, std::chrono::milliseconds timeout) {
    std::string out;
    auto deadline = steady::now() + timeout;
    while (out.size() < n) {
      auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - steady::now());
      if (left.count() <= 0) return std::nullopt;
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
      char buf[4096];
      auto r = ::read(fd_, buf, std::min(sizeof buf, n - out.size()));
      if (r <= 0) {
        error_ = r < 0 ? errno : 0;
        eof_ = true;
        return std::nullopt;
      }
      out.append(buf, static_cast<std::size_t>(r));
    }
    return out;
  }
  int error() const { return error_; }
  bool closed() const { return eof_; }

 private:
  int fd_;
  int error_{0};
  bool eof_{false};
};

struct TcpProxy : ::testing::Test {
  echo_server server;
  tcp_proxy proxy{server.port()};
};

TEST_F(TcpProxy, PassRelaysBothWays) {
  client c(proxy.port());
  ASSERT_TRUE(c.send("hello"));
  EXPECT_EQ(c.recv(5, 5s), "hello");
  ASSERT_TRUE(c.send("again"));
  EXPECT_EQ(c.recv(5, 5s), "again");
  EXPECT_EQ(proxy.accepted(), 1u);
}

TEST_F(TcpProxy, DelayHoldsEveryChunkAtLeastThatLong) {
  client c(proxy.port());
  proxy.delay(150ms);
  auto start = steady::now();
  ASSERT_TRUE(c.send("slow"));
  EXPECT_EQ(c.recv(4, 5s), "slow");
  // Both directions are delayed; only the lower bound is a property of the proxy.
  EXPECT_GE(steady::now() - start, 300ms);
  proxy.pass();
  ASSERT_TRUE(c.send("fast"));
  EXPECT_EQ(c.recv(4, 5s), "fast");
}

TEST_F(TcpProxy, BlackholeForwardsNothingUntilPass) {
  client c(proxy.port());
  ASSERT_TRUE(c.send("a"));
  ASSERT_EQ(c.recv(1, 5s), "a");
  proxy.blackhole();
  ASSERT_TRUE(c.send("held"));
  EXPECT_EQ(c.recv(4, 300ms), std::nullopt);
  EXPECT_FALSE(c.closed());  // the connection stays up, silent
  EXPECT_EQ(server.received(), 1u);
  client late(proxy.port());  // the kernel completes the handshake; nothing more happens
  ASSERT_TRUE(late.send("x"));
  EXPECT_EQ(late.recv(1, 200ms), std::nullopt);
  proxy.pass();  // the partition heals: buffered bytes flow
  EXPECT_EQ(c.recv(4, 5s), "held");
  EXPECT_EQ(late.recv(1, 5s), "x");
}

TEST_F(TcpProxy, ResetSendsRstToEveryConnectionAndNewOnes) {
  client c(proxy.port());
  ASSERT_TRUE(c.send("a"));
  ASSERT_EQ(c.recv(1, 5s), "a");
  proxy.reset();
  EXPECT_EQ(c.recv(1, 5s), std::nullopt);
  EXPECT_EQ(c.error(), ECONNRESET);
  client during(proxy.port());
  (void)during.send("b");
  EXPECT_EQ(during.recv(1, 5s), std::nullopt);
  EXPECT_TRUE(during.closed());
  EXPECT_GE(proxy.resets(), 2u);
  proxy.pass();
  client after(proxy.port());
  ASSERT_TRUE(after.send("c"));
  EXPECT_EQ(after.recv(1, 5s), "c");
}

TEST_F(TcpProxy, DropNextReplyDeliversTheRequestButResetsBeforeTheReply) {
  client c(proxy.port());
  ASSERT_TRUE(c.send("a"));
  ASSERT_EQ(c.recv(1, 5s), "a");
  proxy.drop_next_reply();
  ASSERT_TRUE(c.send("req"));
  EXPECT_EQ(c.recv(3, 5s), std::nullopt);
  EXPECT_EQ(c.error(), ECONNRESET);
  EXPECT_EQ(server.received(), 4u);  // the server got (and answered) the request
  EXPECT_EQ(proxy.dropped_replies(), 1u);
  // One-shot: the next connection works normally.
  client next(proxy.port());
  ASSERT_TRUE(next.send("ok"));
  EXPECT_EQ(next.recv(2, 5s), "ok");
}

TEST(TcpProxyNoServer, ConnectionToADownServerIsReset) {
  std::uint16_t dead_port;
  {
    echo_server s;
    dead_port = s.port();
  }
  tcp_proxy proxy(dead_port);
  client c(proxy.port());
  (void)c.send("x");
  EXPECT_EQ(c.recv(1, 5s), std::nullopt);
  EXPECT_TRUE(c.closed());
}

}  // namespace
}  // namespace dlock::test
