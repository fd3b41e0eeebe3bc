#pragma once
// Lets another thread break off a blocking request on a session's database connection once
// the session has expired (backend_session::on_expired): the request's answer no longer
// matters, and the client libraries (libpq, libmariadb) would otherwise wait out the request
// timeout on a dead link. shutdown(2), never close(2): the connection still closes its
// descriptor; and only while the descriptor is registered, so a number reused after the
// connection closed is never touched. Each connection (pg::conn, my::conn) owns one, shared
// with whoever may interrupt it, and clears it before it closes its descriptor, on every path.

#include <sys/socket.h>

#include <mutex>

namespace dlock::detail {

class socket_interrupt {
 public:
  void set(int fd) noexcept {
    std::lock_guard lk(mu_);
    fd_ = fd;
  }
  void clear() noexcept { set(-1); }
  // The blocked request (and every later one) on the registered socket fails at once.
  void interrupt() noexcept {
    std::lock_guard lk(mu_);
    if (fd_ >= 0) ::shutdown(fd_, SHUT_RDWR);
  }

 private:
  std::mutex mu_;
  int fd_{-1};
};

}  // namespace dlock::detail
