// Misconfiguration: wrong password, nothing listening, something that is not Redis.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <dlock/dlock.hpp>
#include <thread>

#include "support/redis_server.hpp"

namespace dlock::test {
namespace {

using namespace std::chrono_literals;

const dlock::session_options quick{.request_timeout = 500ms, .retry = {.max_attempts = 1}};

// A TCP listener on loopback that answers every connection with `banner` (or nothing).
class fake_server {
 public:
  explicit fake_server(std::string banner) : banner_(std::move(banner)) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a);
    socklen_t len = sizeof a;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    ::listen(fd_, 16);
    thread_ = std::jthread([this](std::stop_token st) {
      while (!st.stop_requested()) {
        int c = ::accept(fd_, nullptr, nullptr);
        if (c < 0) return;
        if (!banner_.empty()) (void)::write(c, banner_.data(), banner_.size());
        clients_.push_back(c);
      }
    });
  }
  ~fake_server() {
    thread_.request_stop();
    ::shutdown(fd_, SHUT_RDWR);
    ::close(fd_);
    thread_.join();
    for (int c : clients_) ::close(c);
  }
  std::uint16_t port() const { return port_; }

 private:
  std::string banner_;
  int fd_{-1};
  std::uint16_t port_{0};
  std::vector<int> clients_;
  std::jthread thread_;
};

std::error_code open_error(const std::string& url, std::string* what = nullptr) {
  try {
    auto s = dlock::session::open(url, quick);
    return {};
  } catch (const dlock::system_error& e) {
    if (what) *what = e.what();
    return e.code();
  }
}

TEST(redis_errors, a_wrong_password_is_permission_denied_and_creates_nothing) {
  redis_server srv({.password = "right-one",
                    .extra_args = {"--user", "alice", "on", ">alices-pw", "~*", "&*", "+@all"}});
  std::string what;
  EXPECT_EQ(open_error("redis://:wrong-one@" + srv.address(), &what),
            dlock::errc::permission_denied);
  EXPECT_NE(what.find(srv.address()), std::string::npos) << what;
  EXPECT_EQ(what.find("wrong-one"), std::string::npos) << "password leaked: " << what;
  EXPECT_EQ(open_error("redis://" + srv.address()), dlock::errc::permission_denied);
  EXPECT_EQ(open_error("redis://alice:nope@" + srv.address()), dlock::errc::permission_denied);
  EXPECT_TRUE(srv.keys("*").empty());

  // The right credentials work, for the default user and for an ACL user.
  for (auto url : {"redis://:right-one@" + srv.address() + "/3?prefix=ok:",
                   "redis://alice:alices-pw@" + srv.address() + "/3?prefix=ok:"}) {
    auto s = dlock::session::open(url, quick);
    dlock::mutex m(s, "x");
    m.lock();
    m.unlock();
  }
}

// A server that may evict keys would drop a held lock's key with no signal: refused at open,
// for Redis and for any Redlock master, naming the policy; noeviction (the default) is fine,
// and a policy changed at runtime is seen by the next open.
TEST(redis_errors, a_server_that_evicts_keys_is_refused_naming_its_policy) {
  redis_server lru({.password = {},
                    .extra_args = {"--maxmemory", "100mb", "--maxmemory-policy", "allkeys-lru"}});
  std::string what;
  EXPECT_EQ(open_error("redis://" + lru.address(), &what), dlock::errc::unsupported);
  EXPECT_NE(what.find("allkeys-lru"), std::string::npos) << what;
  EXPECT_NE(what.find(lru.address()), std::string::npos) << what;
  EXPECT_TRUE(lru.keys("*").empty()) << "a refused open left keys behind";

  redis_server a, b;
  EXPECT_EQ(open_error("redlock://" + a.address() + "," + b.address() + "," + lru.address(), &what),
            dlock::errc::unsupported);
  EXPECT_NE(what.find(lru.address()), std::string::npos) << what;
  EXPECT_TRUE(a.keys("*").empty() && b.keys("*").empty()) << "a refused open left keys behind";

  EXPECT_EQ(open_error("redis://" + a.address()), std::error_code{});
  a.command({"CONFIG", "SET", "maxmemory-policy", "volatile-ttl"});
  EXPECT_EQ(open_error("redis://" + a.address(), &what), dlock::errc::unsupported)
      << "dlock's keys carry a TTL: the volatile policies evict them too";
}

// The URL's /db beyond the server's `databases` is a wrong URL (64 in the CLI), not an
// unavailable backend (69), and it is said at once, not retried.
TEST(redis_errors, a_database_the_server_does_not_have_is_invalid_argument) {
  redis_server srv;
  std::string what;
  EXPECT_EQ(open_error("redis://" + srv.address() + "/99", &what), dlock::errc::invalid_argument);
  EXPECT_NE(what.find("database 99"), std::string::npos) << what;
  EXPECT_EQ(open_error("redis://" + srv.address() + "/3"), std::error_code{});
}

TEST(redis_errors, nothing_listening_is_backend_unavailable_naming_the_address) {
  auto port = free_port();
  std::string what;
  EXPECT_EQ(open_error("redis://127.0.0.1:" + std::to_string(port), &what),
            dlock::errc::backend_unavailable);
  EXPECT_NE(what.find("127.0.0.1:" + std::to_string(port)), std::string::npos) << what;
}

TEST(redis_errors, a_port_that_is_not_redis_is_a_clear_error) {
  fake_server http("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n");
  std::string what;
  EXPECT_EQ(open_error("redis://127.0.0.1:" + std::to_string(http.port()), &what),
            dlock::errc::protocol_error);
  EXPECT_NE(what.find("127.0.0.1:" + std::to_string(http.port())), std::string::npos) << what;

  fake_server silent("");
  auto started = std::chrono::steady_clock::now();
  EXPECT_EQ(open_error("redis://127.0.0.1:" + std::to_string(silent.port()), &what),
            dlock::errc::backend_unavailable);
  EXPECT_LT(std::chrono::steady_clock::now() - started, 30s) << "a silent peer must not hang";
}

TEST(redis_errors, redlock_urls_need_an_odd_number_of_at_least_three_servers) {
  EXPECT_EQ(open_error("redlock://127.0.0.1:1,127.0.0.1:2"), dlock::errc::invalid_argument);
  EXPECT_EQ(open_error("redlock://127.0.0.1:1"), dlock::errc::invalid_argument);
  EXPECT_EQ(open_error("redis://127.0.0.1:1,127.0.0.1:2"), dlock::errc::invalid_argument);
  EXPECT_EQ(open_error("redis://127.0.0.1:1/notanumber"), dlock::errc::invalid_argument);
}

TEST(redis_errors, redlock_refuses_one_server_named_twice) {
  std::string what;
  EXPECT_EQ(open_error("redlock://127.0.0.1:7001,127.0.0.1:7002,127.0.0.1:7001", &what),
            dlock::errc::invalid_argument);
  EXPECT_NE(what.find("names one server twice"), std::string::npos) << what;
  // The same server under two names is still one vote.
  EXPECT_EQ(open_error("redlock://localhost:7001,127.0.0.1:7002,127.0.0.1:7001", &what),
            dlock::errc::invalid_argument);
  EXPECT_NE(what.find("both 127.0.0.1"), std::string::npos) << what;
  // Default port 6379 counts as given.
  EXPECT_EQ(open_error("redlock://127.0.0.1,127.0.0.1:6379,127.0.0.1:7002"),
            dlock::errc::invalid_argument);
}

// A server that answers the login and then nothing (here: writes paused by CLIENT PAUSE) costs
// an open its open_timeout, not a request timeout per request: three requests of 5 s each held
// a tester's open 15 s whatever open_timeout, -n or -w said.
TEST(redis_errors, an_open_that_logs_in_and_then_hears_nothing_keeps_its_open_timeout) {
  redis_server srv;
  srv.command({"CLIENT", "PAUSE", "20000", "WRITE"});
  dlock::session_options o;
  o.open_timeout = 1500ms;
  const auto start = std::chrono::steady_clock::now();
  std::error_code ec;
  try {
    auto s = dlock::session::open("redis://" + srv.address(), o);
  } catch (const dlock::system_error& e) {
    ec = e.code();
  }
  const auto took = std::chrono::steady_clock::now() - start;
  srv.command({"CLIENT", "UNPAUSE"});
  EXPECT_EQ(ec, dlock::errc::backend_unavailable) << ec.message();
  // The open's budget, and two seconds of slack for a loaded machine.
  EXPECT_LT(took, o.open_timeout + 2s)
      << "the open took " << std::chrono::duration_cast<std::chrono::milliseconds>(took).count()
      << " ms";
}

}  // namespace
}  // namespace dlock::test
