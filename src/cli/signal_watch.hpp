#pragma once
// Synchronous signal handling for `dlock run`: SIGINT, SIGTERM, SIGHUP and SIGCHLD are
// blocked in every thread and read from a signalfd, so the main thread sees them in one poll
// loop together with wake-ups from dlock's threads (lock granted, lock lost).

#include <chrono>
#include <memory>

namespace dlock::cli {

// An eventfd other threads poke; shared so a late callback never writes to a closed fd.
class waker {
 public:
  waker();
  ~waker();
  waker(const waker&) = delete;
  waker& operator=(const waker&) = delete;
  void wake() const noexcept;
  int fd() const noexcept { return fd_; }
  void drain() const noexcept;

 private:
  int fd_;
};

class signal_watch {
 public:
  // Blocks the signals in the calling thread; threads started afterwards inherit the mask,
  // so construct this before opening any session.
  signal_watch();
  ~signal_watch();
  signal_watch(const signal_watch&) = delete;
  signal_watch& operator=(const signal_watch&) = delete;

  struct event {
    int signal{0};      // a received signal, or 0
    bool woken{false};  // waker::wake() was called
  };
  // Waits up to `timeout` (negative: forever) for a signal or a wake-up.
  event wait(std::chrono::milliseconds timeout);

  const std::shared_ptr<waker>& wakeup() const noexcept { return waker_; }

 private:
  int sfd_;
  std::shared_ptr<waker> waker_;
};

}  // namespace dlock::cli
