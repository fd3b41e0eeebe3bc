#include "cli/signal_watch.hpp"

#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>

namespace dlock::cli {
namespace {

constexpr int forwarded_signals[] = {SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2, SIGALRM};

// SIGPIPE is read and dropped: a write to a closed stdout fails with EPIPE instead of killing
// dlock (and so CMD) mid-run. Blocked SIGTTOU lets dlock write to, and hand over, a terminal
// whose foreground is CMD's group. SIGTSTP and SIGCONT are passed on to CMD by supervise().
sigset_t watched_signals() {
  sigset_t set;
  sigemptyset(&set);
  for (int s : forwarded_signals) sigaddset(&set, s);
  for (int s : {SIGPIPE, SIGTTOU, SIGTSTP, SIGCONT, SIGCHLD}) sigaddset(&set, s);
  return set;
}

}  // namespace

waker::waker() : fd_(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {
  if (fd_ < 0) throw std::runtime_error(std::string("eventfd: ") + std::strerror(errno));
}
waker::~waker() { ::close(fd_); }

void waker::wake() const noexcept {
  std::uint64_t one = 1;
  [[maybe_unused]] auto n = ::write(fd_, &one, sizeof one);
}

void waker::drain() const noexcept {
  std::uint64_t v = 0;
  [[maybe_unused]] auto n = ::read(fd_, &v, sizeof v);
}

bool signal_watch::forwarded(int sig) noexcept {
  for (int s : forwarded_signals) {
    if (s == sig) return true;
  }
  return false;
}

signal_watch::signal_watch() : waker_(std::make_shared<waker>()) {
  sigset_t set = watched_signals();
  pthread_sigmask(SIG_BLOCK, &set, &original_);
  sfd_ = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
  if (sfd_ < 0) throw std::runtime_error(std::string("signalfd: ") + std::strerror(errno));
}

// The signals stay blocked: one arriving during shutdown must not kill dlock before it has
// released the lock and reported CMD's status.
signal_watch::~signal_watch() { ::close(sfd_); }

namespace {
struct sigaction file_size_original {};
bool file_size_saved = false;
}  // namespace

void ignore_file_size_signal() noexcept {
  struct sigaction ign {};
  ign.sa_handler = SIG_IGN;
  file_size_saved = ::sigaction(SIGXFSZ, &ign, &file_size_original) == 0;
}

void restore_file_size_signal() noexcept {
  if (file_size_saved) ::sigaction(SIGXFSZ, &file_size_original, nullptr);
}

signal_watch::event signal_watch::wait(std::chrono::milliseconds timeout) {
  pollfd fds[2] = {{sfd_, POLLIN, 0}, {waker_->fd(), POLLIN, 0}};
  int ms =
      timeout.count() < 0 ? -1 : static_cast<int>(std::min<long long>(timeout.count(), 1 << 30));
  int r = ::poll(fds, 2, ms);
  event ev;
  if (r <= 0) return ev;
  if (fds[0].revents & POLLIN) {
    signalfd_siginfo info{};
    if (::read(sfd_, &info, sizeof info) == static_cast<ssize_t>(sizeof info)) {
      ev.signal = static_cast<int>(info.ssi_signo);
    }
  }
  if (fds[1].revents & POLLIN) {
    waker_->drain();
    ev.woken = true;
  }
  return ev;
}

}  // namespace dlock::cli
