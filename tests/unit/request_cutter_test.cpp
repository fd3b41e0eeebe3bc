// request_cutter cuts a connection's blocking request at its caller's deadline (the MariaDB
// doorbells' GET_LOCK, mode=advisory's polls): a server that stops answering must not hold a
// waiter for the connection's read timeout. Here a socket pair stands for the connection.
#include "backends/common/request_cutter.hpp"

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

class socket_pair {
 public:
  socket_pair() {
    if (::socketpair(AF_UNIX, SOCK_STREAM, 0, fd_) != 0) throw std::runtime_error("socketpair");
    cut->set(fd_[0]);
  }
  ~socket_pair() {
    cut->clear();
    ::close(fd_[0]);
    ::close(fd_[1]);
  }
  // Whether our end reads end-of-file (it was shut down) within `within`; false if it stays
  // silent that long.
  bool shut_within(std::chrono::milliseconds within) const {
    pollfd p{fd_[0], POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(within.count())) <= 0) return false;
    char c;
    return ::recv(fd_[0], &c, 1, MSG_DONTWAIT) == 0;
  }
  std::shared_ptr<detail::socket_interrupt> cut = std::make_shared<detail::socket_interrupt>();

 private:
  int fd_[2]{-1, -1};
};

TEST(request_cutter, cuts_the_connection_at_the_armed_time) {
  detail::request_cutter cutter;
  socket_pair conn;
  auto ticket = cutter.arm(steady::now() + 20ms, conn.cut);
  EXPECT_TRUE(conn.shut_within(10s));
  EXPECT_TRUE(ticket.fired());
}

TEST(request_cutter, a_ticket_given_up_before_its_time_cuts_nothing) {
  detail::request_cutter cutter;
  socket_pair conn;
  { auto ticket = cutter.arm(steady::now() + 50ms, conn.cut); }
  EXPECT_FALSE(conn.shut_within(300ms));
}

// The thread sleeps until the earliest armed time: one armed sooner must wake it.
TEST(request_cutter, a_sooner_time_armed_later_is_not_kept_waiting_by_a_later_one) {
  detail::request_cutter cutter;
  socket_pair late, soon;
  auto far = cutter.arm(steady::now() + 1h, late.cut);
  std::this_thread::sleep_for(20ms);  // the thread is asleep until the hour is up
  auto near = cutter.arm(steady::now() + 20ms, soon.cut);
  EXPECT_TRUE(soon.shut_within(10s));
  EXPECT_TRUE(near.fired());
  EXPECT_FALSE(far.fired());
  EXPECT_FALSE(late.shut_within(0ms));
}

// arm() wakes the thread only for a time sooner than it sleeps until; a later one armed after
// a ticket was given up is found when the thread wakes for the stale time.
TEST(request_cutter, a_later_time_armed_after_one_given_up_still_cuts) {
  detail::request_cutter cutter;
  socket_pair first, second;
  { auto given_up = cutter.arm(steady::now() + 30ms, first.cut); }
  auto later = cutter.arm(steady::now() + 60ms, second.cut);
  EXPECT_TRUE(second.shut_within(10s));
  EXPECT_TRUE(later.fired());
  EXPECT_FALSE(first.shut_within(0ms));
}

TEST(request_cutter, a_caller_without_a_deadline_is_never_cut) {
  detail::request_cutter cutter;
  socket_pair conn;
  auto ticket = cutter.arm(steady::time_point::max(), conn.cut);
  EXPECT_FALSE(conn.shut_within(100ms));
  EXPECT_FALSE(ticket.fired());
}

// A session's connection tells its holds they are lost before the cut frees their locks
// (request_guard.hpp): the action runs first, with the socket still open, and outside the
// cutter's lock, so it may arm and give up tickets of the same cutter meanwhile.
TEST(request_cutter, runs_its_action_before_the_cut_and_outside_its_lock) {
  detail::request_cutter cutter;
  socket_pair conn;
  socket_pair other;
  std::atomic<int> open_during_action{-1};
  auto ticket = cutter.arm(steady::now() + 20ms, conn.cut, [&] {
    open_during_action = conn.shut_within(0ms) ? 0 : 1;
    auto inner = cutter.arm(steady::now() + 1h, other.cut);  // would deadlock under the lock
  });
  EXPECT_TRUE(conn.shut_within(10s));
  EXPECT_EQ(open_during_action.load(), 1) << "the connection was cut before the action ran";
  EXPECT_TRUE(ticket.fired());
  EXPECT_FALSE(other.shut_within(50ms));
}

}  // namespace
}  // namespace dlock::test
