// Issue 12, item 16: connecting is part of the wait the user bounded. A server that accepts
// TCP connections and never answers must not cost more than `-n`'s short budget, `-w D`, or
// (in the library) about request_timeout for session::open in total.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <dlock/session.hpp>
#include <stdexcept>

#include "cli_harness.hpp"

namespace dlock::test {
namespace {

using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

// Listens on a loopback port and never accepts: the kernel completes every handshake (up to
// the backlog), nothing is ever read or written.
class silent_server {
 public:
  silent_server() {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (fd_ < 0 || ::bind(fd_, reinterpret_cast<sockaddr*>(&a), len) != 0 ||
        ::listen(fd_, 128) != 0 || ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len) != 0)
      throw std::runtime_error("silent_server: cannot listen");
    port_ = ntohs(a.sin_port);
  }
  ~silent_server() { ::close(fd_); }
  std::string hostport() const { return "127.0.0.1:" + std::to_string(port_); }

 private:
  int fd_{-1};
  std::uint16_t port_{0};
};

std::vector<std::string> silent_urls(const silent_server& s) {
  return {"redis://" + s.hostport(), "zk://" + s.hostport() + "/cli",
          "postgres://dlock:secret@" + s.hostport() + "/dlock",
          "mysql://dlock:secret@" + s.hostport() + "/dlock"};
}

long long ms_since(steady::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(steady::now() - t).count();
}

TEST(CliSilentServer, NonblockAndWaitBoundConnecting) {
  silent_server srv;
  cli_sandbox box;
  for (const auto& url : silent_urls(srv)) {
    SCOPED_TRACE(url);
    auto t0 = steady::now();
    auto n = box.run({"run", "-n", "--url", url, "k", "--", "echo", "CMD-RAN"});
    auto n_ms = ms_since(t0);
    EXPECT_EQ(n.status, 69) << n.output;
    EXPECT_EQ(n.output.find("CMD-RAN"), std::string::npos);
    // -n gives connecting one short try (2 s); before, a silent server cost 10 s.
    EXPECT_LT(n_ms, 4000) << n.output;
    EXPECT_NE(n.output.find("attempt"), std::string::npos) << n.output;

    t0 = steady::now();
    auto w = box.run({"run", "-w", "1s", "--url", url, "k", "--", "echo", "CMD-RAN"});
    auto w_ms = ms_since(t0);
    EXPECT_EQ(w.status, 69) << w.output;
    EXPECT_LT(w_ms, 3000) << w.output;
    // The message gives the real time spent, never the 5000 ms request timeout.
    EXPECT_EQ(w.output.find("5000 ms"), std::string::npos) << w.output;
  }
}

TEST(SessionOpen, SilentServerCostsAboutTheRequestTimeoutInTotal) {
  silent_server srv;
  for (const auto& url : silent_urls(srv)) {
    SCOPED_TRACE(url);
    auto t0 = steady::now();
    std::string what;
    try {
      (void)dlock::session::open(url, {.request_timeout = 1500ms});
    } catch (const std::system_error& e) {
      what = e.what();
    }
    auto took = ms_since(t0);
    ASSERT_FALSE(what.empty());
    // Several attempts used to take 2 x request_timeout, each one a full request_timeout.
    EXPECT_LT(took, 2500) << what;
    EXPECT_NE(what.find("attempt"), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace dlock::test
