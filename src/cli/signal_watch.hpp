#pragma once
// Synchronous signal handling for `dlock run`: the terminating signals a user or a scheduler
// sends (see forwarded()), SIGPIPE, SIGTSTP, SIGCONT and SIGCHLD are blocked in every thread and
// read from a signalfd, so the main thread sees them in one poll loop together with wake-ups
// from dlock's threads (lock granted, lock lost).

#include <signal.h>

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
  // True for the signals dlock passes on to CMD's process group (SIGHUP, SIGINT, SIGQUIT,
  // SIGTERM, SIGUSR1, SIGUSR2, SIGALRM): each would kill dlock by default, so each is an
  // order to stop, for CMD as much as for dlock. Every other signal that kills dlock is left
  // to its default action; the guard process then kills CMD's group (see supervise.hpp).
  static bool forwarded(int sig) noexcept;

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
  // The signal mask dlock started with, for CMD.
  const sigset_t& original_mask() const noexcept { return original_; }

 private:
  sigset_t original_;
  int sfd_;
  std::shared_ptr<waker> waker_;
};

// SIGXFSZ (a write past RLIMIT_FSIZE: a SQLite file at the limit) killed dlock at once, and
// CMD got SIGKILL without its grace. dlock ignores it, so the write fails (EFBIG) and is
// reported; CMD gets the disposition dlock was started with back (restore, in the child
// before exec: async-signal-safe).
void ignore_file_size_signal() noexcept;
void restore_file_size_signal() noexcept;

}  // namespace dlock::cli
