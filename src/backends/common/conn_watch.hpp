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

#include <poll.h>
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
    if (wake_ < 0 || fd < 0) return;  // without a watch, the next renewal finds out
    thread_ = std::thread(
        [this, fd, alive = std::move(alive), lost = std::move(lost)] { run(fd, alive, lost); });
  }

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
    if (wake_ >= 0) ::close(wake_);
    wake_ = -1;
  }

 private:
  void run(int fd, const std::function<bool()>& alive, const std::function<void()>& lost) {
    // alive() reads what arrived, so the socket is readable again only when something new
    // came: look at it at once (a sleep here would let the server free the locks, and another
    // client be granted, before the holder hears of it). Only a socket that stays readable
    // while alive() says fine (nothing to read after all) is looked at less often.
    int spins = 0;
    for (;;) {
      pollfd p[2] = {{wake_, POLLIN, 0}, {fd, POLLIN, 0}};
      int n = ::poll(p, 2, -1);
      if (n < 0 && errno != EINTR) return;
      if (p[0].revents) return;
      if (p[1].revents == 0) continue;
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
    }
  }

  int wake_{-1};
  std::thread thread_;
};

}  // namespace dlock::detail
