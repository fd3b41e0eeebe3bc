#pragma once
// Watches the socket of a session's database connection between requests. For the SQL
// backends the connection IS the session (its end ends the session on the server, and
// waiters take over at once), so the holder must learn of a server-side end (a terminated
// backend, KILL CONNECTION, a restart) as soon as the socket says so, not at its next
// renewal: that is what keeps the window in which two processes believe they hold short.
//
// `alive()` runs when the socket turns readable; it takes the owner's lock (so it never
// reads while a request is in flight) and says whether the connection still lives. When it
// says no, `lost()` runs once, without any lock, and the watch ends.
//
// A request's own reply makes the socket readable too. Left in the watch, every reply woke
// this thread, which then waited for the owner's lock and found nothing: two context switches
// and a lock hand-over per request, a quarter of an uncontended PostgreSQL cycle. The owner
// takes the socket out of the watch for a request (pause/resume, one epoll_ctl each, which
// wakes nobody); the socket is watched one-shot and re-armed after each look.

#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <functional>
#include <thread>

namespace dlock::detail {

class conn_watch {
 public:
  conn_watch() = default;
  conn_watch(const conn_watch&) = delete;
  ~conn_watch() { stop(); }

  void start(int fd, std::function<bool()> alive, std::function<void()> lost) {
    stop();
    wake_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    ep_ = ::epoll_create1(EPOLL_CLOEXEC);
    epoll_event w{};
    w.events = EPOLLIN;
    w.data.fd = wake_;
    epoll_event s{};
    s.events = EPOLLIN | EPOLLONESHOT;
    s.data.fd = fd;
    if (wake_ < 0 || fd < 0 || ep_ < 0 || ::epoll_ctl(ep_, EPOLL_CTL_ADD, wake_, &w) != 0 ||
        ::epoll_ctl(ep_, EPOLL_CTL_ADD, fd, &s) != 0) {
      close_fds();  // without a watch, the next renewal finds out
      return;
    }
    fd_ = fd;
    thread_ = std::thread(
        [this, fd, alive = std::move(alive), lost = std::move(lost)] { run(fd, alive, lost); });
  }

  // The owner, under its lock, around a request on the watched socket: the reply wakes no one.
  // A look already under way waits for the owner's lock as before, and re-arms after it.
  void pause() noexcept { arm(0); }
  void resume() noexcept { arm(EPOLLIN); }

  void stop() noexcept {
    if (wake_ >= 0) {
      std::uint64_t one = 1;
      (void)!::write(wake_, &one, sizeof one);
    }
    if (thread_.joinable()) {
      // lost() may lead (through the engine's callbacks) to the owner closing itself.
      if (thread_.get_id() == std::this_thread::get_id())
        thread_.detach();
      else
        thread_.join();
    }
    close_fds();
  }

 private:
  void arm(std::uint32_t events) noexcept {
    if (ep_ < 0 || fd_ < 0) return;
    epoll_event e{};
    e.events = events | EPOLLONESHOT;
    e.data.fd = fd_;
    (void)::epoll_ctl(ep_, EPOLL_CTL_MOD, fd_, &e);
  }

  void close_fds() noexcept {
    if (ep_ >= 0) ::close(ep_);
    if (wake_ >= 0) ::close(wake_);
    ep_ = wake_ = fd_ = -1;
  }

  void run(int fd, const std::function<bool()>& alive, const std::function<void()>& lost) {
    // alive() reads what arrived, so the socket is readable again only when something new
    // came: look at it at once (a sleep here would let the server free the locks, and another
    // client be granted, before the holder hears of it). Only a socket that stays readable
    // while alive() says fine (nothing to read after all) is looked at less often.
    int spins = 0;
    for (;;) {
      epoll_event ev[2];
      int n = ::epoll_wait(ep_, ev, 2, -1);
      if (n < 0 && errno != EINTR) return;
      bool readable = false;
      for (int i = 0; i < n; ++i) {
        if (ev[i].data.fd == wake_) return;
        readable = true;
      }
      if (!readable) continue;
      if (!alive()) {
        lost();
        return;
      }
      pollfd again{fd, POLLIN, 0};
      if (::poll(&again, 1, 0) <= 0) {
        spins = 0;
      } else if (++spins > 2) {
        std::this_thread::sleep_for(std::chrono::milliseconds{1});
      }
      resume();  // one-shot: fired, so disarmed until now
    }
  }

  int wake_{-1};
  int ep_{-1};
  int fd_{-1};  // the watched socket (the owner's)
  std::thread thread_;
};

}  // namespace dlock::detail
