#include "backends/redis/redis_dial.hpp"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <string>

namespace dlock::detail::redis {
namespace {

using steady = std::chrono::steady_clock;

struct fd_closer {
  int fd{-1};
  ~fd_closer() {
    if (fd >= 0) ::close(fd);
  }
  int release() noexcept { return std::exchange(fd, -1); }
};

// Waits for a non-blocking connect on `fd` until `until`; 0, or the errno that ended it.
int await_connect(int fd, int wake, steady::time_point until) {
  for (;;) {
    auto left = std::chrono::ceil<std::chrono::milliseconds>(until - steady::now()).count();
    if (left <= 0) return ETIMEDOUT;
    pollfd fds[2] = {{fd, POLLOUT, 0}, {wake, POLLIN, 0}};
    int n = ::poll(fds, 2, static_cast<int>(std::min<long long>(left, 1 << 30)));
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    if (fds[1].revents != 0) return ECANCELED;
    if (fds[0].revents != 0) {
      int err = 0;
      socklen_t len = sizeof err;
      if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) return errno;
      return err;
    }
  }
}

}  // namespace

result<int> dial(const target& t, std::chrono::milliseconds timeout, std::stop_token stop,
                 bool& timed_out) {
  timed_out = false;
  if (stop.stop_requested()) return fail(errc::cancelled, t.where + ": cancelled");
  const auto until = steady::now() + timeout;
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const auto port = std::to_string(t.port);
  if (int rc = ::getaddrinfo(t.host.c_str(), port.c_str(), &hints, &found); rc != 0) {
    return fail(errc::backend_unavailable,
                t.where + ": cannot resolve " + t.host + ": " + ::gai_strerror(rc));
  }
  std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> addrs(found, &::freeaddrinfo);
  // The stop callback writes to an eventfd the connect's poll() also watches.
  fd_closer wake{::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)};
  if (wake.fd < 0)
    return fail(errc::backend_unavailable, t.where + ": eventfd: " + std::strerror(errno));
  std::stop_callback on_stop(stop, [w = wake.fd] {
    std::uint64_t one = 1;
    (void)!::write(w, &one, sizeof one);
  });
  int last = ECONNREFUSED;
  for (addrinfo* a = addrs.get(); a != nullptr; a = a->ai_next) {
    fd_closer s{
        ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol)};
    if (s.fd < 0) {
      last = errno;
      continue;
    }
    int err = ::connect(s.fd, a->ai_addr, a->ai_addrlen) == 0 ? 0 : errno;
    if (err == EINPROGRESS) err = await_connect(s.fd, wake.fd, until);
    if (err == ECANCELED) return fail(errc::cancelled, t.where + ": cancelled");
    if (err == ETIMEDOUT) {
      timed_out = true;
      return fail(errc::backend_unavailable,
                  t.where + ": no connection within " + std::to_string(timeout.count()) + " ms");
    }
    if (err != 0) {
      last = err;
      continue;
    }
    // hiredis's own connect sets these; its blocking API needs a blocking socket.
    int on = 1;
    (void)::setsockopt(s.fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
    int flags = ::fcntl(s.fd, F_GETFL);
    if (flags < 0 || ::fcntl(s.fd, F_SETFL, flags & ~O_NONBLOCK) < 0) {
      last = errno;
      continue;
    }
    return s.release();
  }
  return fail(errc::backend_unavailable, t.where + ": " + std::strerror(last));
}

}  // namespace dlock::detail::redis
