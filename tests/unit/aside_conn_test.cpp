// aside_conn runs a SQL session's timed reads on a connection of their own, cut off at the
// caller's deadline: a server that stops answering must not hold a timed waiter's listing or
// `dlock run`'s look at the holder for a request timeout (a tester's `-w 3s` took 13 s).
// Here a socket pair stands for each connection, and the test plays the server.
#include "backends/common/aside_conn.hpp"

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <stdexcept>
#include <thread>

namespace dlock::test {
namespace {

using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;
using detail::fail;
using detail::result;

// One connection: the client's end blocks in run() until the server's end writes a byte
// (the answer) or the client's end is shut down (cut).
struct wire {
  wire() {
    if (::socketpair(AF_UNIX, SOCK_STREAM, 0, fd) != 0) throw std::runtime_error("socketpair");
    cut->set(fd[0]);
  }
  ~wire() {
    cut->clear();
    ::close(fd[0]);
    ::close(fd[1]);
  }
  void answer() const { (void)!::write(fd[1], "x", 1); }
  int fd[2]{-1, -1};
  std::shared_ptr<detail::socket_interrupt> cut = std::make_shared<detail::socket_interrupt>();
};

class fake_conn {
 public:
  explicit fake_conn(std::shared_ptr<wire> w) : w_(std::move(w)) {}
  bool usable() const { return w_ != nullptr; }
  void close() { w_.reset(); }
  std::shared_ptr<detail::socket_interrupt> interrupter() const { return w_->cut; }
  result<int> run() {
    pollfd p{w_->fd[0], POLLIN, 0};
    char c;
    if (::poll(&p, 1, 10'000) == 1 && ::recv(w_->fd[0], &c, 1, 0) == 1) return 42;
    w_.reset();  // end of file: the connection is gone
    return fail(errc::backend_unavailable, "connection lost");
  }

 private:
  std::shared_ptr<wire> w_;
};

struct server {
  std::atomic<int> opened{0};
  bool refused{false};
  bool refuse_opens{false};
  std::shared_ptr<wire> last;
  detail::aside_conn<fake_conn> aside{"fake", [this]() -> result<fake_conn> {
                                        if (refuse_opens) {
                                          return fail(errc::backend_unavailable,
                                                      "too many clients");
                                        }
                                        ++opened;
                                        last = std::make_shared<wire>();
                                        return fake_conn(last);
                                      }};
};

// The caller's session ended (session_conn::on_expired): the read in flight is broken off at
// once, not at its deadline (a tester's waiters on a frozen server heard session_expired 2-4.5 s
// after their session ended).
TEST(aside_conn, interrupt_breaks_off_the_request_in_flight) {
  server s;
  std::jthread ender([&] {
    std::this_thread::sleep_for(100ms);
    s.aside.interrupt();
  });
  const auto started = steady::now();
  auto r = s.aside.run(
      steady::now() + 30s, [](fake_conn& c) { return c.run(); }, &s.refused);
  EXPECT_FALSE(r);
  EXPECT_LT(steady::now() - started, 10s) << "ran to the fake server's own 10 s";
  s.aside.interrupt();  // nothing in flight: nothing happens
}

TEST(aside_conn, a_request_the_server_does_not_answer_is_cut_off_at_its_deadline) {
  server s;
  auto r = s.aside.run(
      steady::now() + 50ms, [](fake_conn& c) { return c.run(); }, &s.refused);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, make_error_code(errc::backend_unavailable));
  EXPECT_NE(r.error().message.find("no answer before the caller's deadline"), std::string::npos)
      << r.error().message;
}

TEST(aside_conn, an_answered_request_keeps_its_connection_and_a_cut_one_is_opened_again) {
  server s;
  auto answered = s.aside.run(
      steady::now() + 10s,
      [&](fake_conn& c) {
        s.last->answer();
        return c.run();
      },
      &s.refused);
  ASSERT_TRUE(answered);
  EXPECT_EQ(*answered, 42);
  auto again = s.aside.run(
      steady::now() + 10s,
      [&](fake_conn& c) {
        s.last->answer();
        return c.run();
      },
      &s.refused);
  ASSERT_TRUE(again);
  EXPECT_EQ(s.opened, 1);
  ASSERT_FALSE(s.aside.run(
      steady::now() + 20ms, [](fake_conn& c) { return c.run(); }, &s.refused));
  auto after_cut = s.aside.run(
      steady::now() + 10s,
      [&](fake_conn& c) {
        s.last->answer();
        return c.run();
      },
      &s.refused);
  ASSERT_TRUE(after_cut) << after_cut.error().message;
  EXPECT_EQ(s.opened, 2);
}

// A request behind one still waiting on a silent server gives up at its own, sooner
// deadline instead of queueing behind the other's.
TEST(aside_conn, a_request_behind_one_in_flight_gives_up_at_its_own_deadline) {
  server s;
  std::atomic<bool> started{false};
  std::jthread first([&] {
    bool refused = false;
    (void)s.aside.run(
        steady::now() + 1s,
        [&](fake_conn& c) {
          started = true;
          return c.run();
        },
        &refused);
  });
  while (!started) std::this_thread::sleep_for(1ms);
  bool ran = false;
  auto r = s.aside.run(
      steady::now() + 50ms,
      [&](fake_conn& c) {
        ran = true;
        return c.run();
      },
      &s.refused);
  ASSERT_FALSE(r);
  EXPECT_FALSE(ran);
  EXPECT_NE(r.error().message.find("another request still waits"), std::string::npos)
      << r.error().message;
}

// A timed waiter opens the connection as its wait begins, so that its read after the
// deadline does not have to connect (libmariadb times a connect in whole seconds).
TEST(aside_conn, a_warmed_connection_is_the_one_the_next_request_uses) {
  server s;
  s.aside.warm(steady::now() + 10s);
  EXPECT_EQ(s.opened, 1);
  s.aside.warm(steady::now() + 10s);
  EXPECT_EQ(s.opened, 1);
  auto r = s.aside.run(
      steady::now() + 10s,
      [&](fake_conn& c) {
        s.last->answer();
        return c.run();
      },
      &s.refused);
  ASSERT_TRUE(r);
  EXPECT_EQ(s.opened, 1);
}

// A server out of connections (max_connections) refuses the second one: the caller is told,
// to use its own, and the open is not tried again at once. A second tester's timed waiters on
// a PostgreSQL with max_connections=20 never saw their grant, their listings failing so.
TEST(aside_conn, a_refused_connection_is_reported_and_not_asked_again_at_once) {
  server s;
  s.refuse_opens = true;
  auto r = s.aside.run(
      steady::now() + 10s, [](fake_conn& c) { return c.run(); }, &s.refused);
  ASSERT_FALSE(r);
  EXPECT_TRUE(s.refused);
  s.refuse_opens = false;
  r = s.aside.run(
      steady::now() + 10s, [](fake_conn& c) { return c.run(); }, &s.refused);
  ASSERT_FALSE(r);
  EXPECT_TRUE(s.refused) << "asked again at once";
  EXPECT_EQ(s.opened, 0);
}

TEST(aside_conn, a_closed_one_refuses_requests) {
  server s;
  s.aside.close();
  auto r = s.aside.run(
      steady::now() + 10s, [](fake_conn& c) { return c.run(); }, &s.refused);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, make_error_code(errc::session_closed));
  EXPECT_EQ(s.opened, 0);
}

}  // namespace
}  // namespace dlock::test
