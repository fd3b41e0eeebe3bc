#include "support/tcp_proxy.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <deque>
#include <stdexcept>
#include <string>
#include <vector>

namespace dlock::test {
namespace {

using steady = std::chrono::steady_clock;
constexpr std::size_t max_queued = 1 << 20;  // per direction: stop reading beyond this

sockaddr_in loopback(std::uint16_t port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(port);
  return a;
}

void set_nonblocking(int fd) { ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK); }

// Closing with a zero linger time sends RST instead of FIN.
void close_rst(int fd) {
  if (fd < 0) return;
  linger l{1, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
  ::close(fd);
}

struct chunk {
  steady::time_point due;
  std::string data;
  std::size_t off{0};
};

struct direction {
  std::deque<chunk> q;
  std::size_t bytes{0};
};

}  // namespace

struct tcp_proxy::loop {
  struct conn {
    int client{-1};
    int server{-1};
    direction to_server, to_client;
    bool drop_pending{false};
    bool dead{false};
    bool client_gone{false};  // closed by the client; what it sent is still being delivered
    bool server_cut{false};   // cut_server_side(): the server's side is closed, the client's mute
  };
  std::vector<conn> conns;
};

tcp_proxy::tcp_proxy(std::uint16_t upstream_port)
    : upstream_(upstream_port), loop_(std::make_unique<loop>()) {
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  auto a = loopback(0);
  if (listen_fd_ < 0 || ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      ::listen(listen_fd_, 128) != 0) {
    auto err = std::string(std::strerror(errno));
    if (listen_fd_ >= 0) ::close(listen_fd_);
    throw std::runtime_error("tcp_proxy: cannot listen: " + err);
  }
  socklen_t len = sizeof a;
  ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&a), &len);
  port_ = ntohs(a.sin_port);
  set_nonblocking(listen_fd_);
  wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  thread_ = std::jthread([this](std::stop_token st) { run(st); });
}

tcp_proxy::~tcp_proxy() {
  thread_.request_stop();
  wake();
  if (thread_.joinable()) thread_.join();
  for (auto& c : loop_->conns) {
    if (c.client >= 0) ::close(c.client);
    if (c.server >= 0) ::close(c.server);
  }
  ::close(listen_fd_);
  ::close(wake_fd_);
}

std::string tcp_proxy::last_dropped_request() const {
  std::lock_guard lk(mu_);
  return armed_request_;
}

void tcp_proxy::pass() { set(mode::pass, {}, false); }
void tcp_proxy::blackhole() { set(mode::blackhole, {}, false); }
void tcp_proxy::delay(std::chrono::milliseconds d) { set(mode::delay, d, false); }
void tcp_proxy::reset() { set(mode::reset, {}, false); }
void tcp_proxy::drop_next_reply() { set(mode::pass, {}, true); }
void tcp_proxy::drop_replies() { set(mode::drop_replies, {}, false); }
void tcp_proxy::cut_server_side() { set(mode::cut_server_side, {}, false); }

void tcp_proxy::wake() {
  std::uint64_t one = 1;
  (void)!::write(wake_fd_, &one, sizeof one);
}

// Returns once the loop runs with the new mode, so a caller that switched to blackhole knows
// that no byte is forwarded after the call returns.
void tcp_proxy::set(mode m, std::chrono::milliseconds d, bool arm_drop) {
  std::unique_lock lk(mu_);
  mode_ = m;
  delay_ = d;
  drop_armed_ = arm_drop;
  auto want = ++generation_;
  lk.unlock();
  wake();
  lk.lock();
  cv_.wait_for(lk, std::chrono::seconds{5}, [&] { return seen_ >= want; });
}

void tcp_proxy::run(std::stop_token stop) {
  auto& conns = loop_->conns;
  auto kill_conn = [&](loop::conn& c, bool rst) {
    if (rst) {
      ++resets_;  // counted first: a client may see the RST before this thread runs on
      close_rst(c.client);
      close_rst(c.server);
    } else {
      ::close(c.client);
      if (c.server >= 0) ::close(c.server);
    }
    c.client = c.server = -1;
    c.dead = true;
    --open_;
  };
  // Reads one chunk from `from` into `d`; false when the connection should end.
  auto pull = [&](int from, direction& d, std::chrono::milliseconds delay, bool& rst) {
    char buf[65536];
    auto n = ::read(from, buf, sizeof buf);
    if (n > 0) {
      d.q.push_back({steady::now() + delay, std::string(buf, static_cast<std::size_t>(n))});
      d.bytes += static_cast<std::size_t>(n);
      return true;
    }
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return true;
    rst = n < 0;  // mirror a reset as a reset, an orderly close as a close
    return false;
  };
  auto push = [](int to, direction& d) {
    auto now = steady::now();
    while (!d.q.empty() && d.q.front().due <= now) {
      auto& c = d.q.front();
      auto n = ::send(to, c.data.data() + c.off, c.data.size() - c.off, MSG_NOSIGNAL);
      if (n < 0) return errno == EAGAIN || errno == EINTR;
      c.off += static_cast<std::size_t>(n);
      d.bytes -= static_cast<std::size_t>(n);
      if (c.off < c.data.size()) return true;
      d.q.pop_front();
    }
    return true;
  };

  // Both directions' due chunks; a connection whose client has gone only drains to the
  // server, then closes (its FIN after its data, as TCP delivers a closed connection's bytes).
  auto push_both = [&](loop::conn& c) {
    if (c.server_cut) return true;
    if (!c.client_gone) return push(c.client, c.to_client) && push(c.server, c.to_server);
    c.to_client.q.clear();
    c.to_client.bytes = 0;
    if (!push(c.server, c.to_server)) return false;
    if (c.to_server.q.empty()) kill_conn(c, false);
    return true;
  };

  std::uint64_t cut_gen = 0;
  while (!stop.stop_requested()) {
    mode m;
    std::chrono::milliseconds delay;
    std::uint64_t gen;
    {
      std::lock_guard lk(mu_);
      m = mode_;
      delay = m == mode::delay ? delay_ : std::chrono::milliseconds{0};
      gen = seen_ = generation_;
    }
    cv_.notify_all();
    if (m == mode::reset) {
      for (auto& c : conns) kill_conn(c, true);
    }
    if (m == mode::cut_server_side && cut_gen != gen) {
      cut_gen = gen;  // only the connections open at the call: new ones pass
      for (auto& c : conns) {
        if (c.dead || c.server_cut || c.client_gone) continue;
        ::shutdown(c.server, SHUT_WR);  // the server reads EOF and ends its side
        ::close(c.server);
        c.server = -1;
        c.server_cut = true;
        c.to_server = {};
        c.to_client = {};
      }
    }
    std::erase_if(conns, [](auto& c) { return c.dead; });

    std::vector<pollfd> fds{{wake_fd_, POLLIN, 0}};
    auto next_due = steady::now() + std::chrono::milliseconds{200};
    if (m != mode::blackhole) {
      fds.push_back({listen_fd_, POLLIN, 0});
      for (auto& c : conns) {
        short cin = c.to_server.bytes < max_queued ? POLLIN : 0;
        short sin = c.to_client.bytes < max_queued ? POLLIN : 0;
        if (!c.to_client.q.empty()) next_due = std::min(next_due, c.to_client.q.front().due);
        if (!c.to_server.q.empty()) next_due = std::min(next_due, c.to_server.q.front().due);
        fds.push_back(
            {c.client, static_cast<short>(cin | (c.to_client.q.empty() ? 0 : POLLOUT)), 0});
        fds.push_back(
            {c.server, static_cast<short>(sin | (c.to_server.q.empty() ? 0 : POLLOUT)), 0});
      }
    }
    auto wait_ms = std::chrono::ceil<std::chrono::milliseconds>(next_due - steady::now());
    int r =
        ::poll(fds.data(), fds.size(), static_cast<int>(std::max<long long>(0, wait_ms.count())));
    if (r < 0 && errno != EINTR) break;
    if (fds[0].revents & POLLIN) {
      std::uint64_t v;
      (void)!::read(wake_fd_, &v, sizeof v);
    }
    {
      // A mode change during poll: handle it first (events stay pending, poll is level-triggered).
      std::lock_guard lk(mu_);
      if (generation_ != gen) continue;
    }
    if (m == mode::blackhole || r <= 0) {
      if (m != mode::blackhole) {
        for (auto& c : conns) {
          if (!c.dead && !push_both(c)) kill_conn(c, true);
        }
      }
      continue;
    }
    if (fds[1].revents & POLLIN) {
      int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
      if (fd >= 0) {
        ++accepted_;
        if (m == mode::reset) {
          ++resets_;
          close_rst(fd);
        } else {
          int up = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
          auto a = loopback(upstream_);
          if (up < 0 || ::connect(up, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
            if (up >= 0) ::close(up);
            ++resets_;
            close_rst(fd);  // the server is down: the client sees a reset
          } else {
            set_nonblocking(up);
            conns.push_back({fd, up, {}, {}, false, false});
            ++open_;
          }
        }
      }
    }
    // Only connections that existed when fds was built have entries in it.
    std::size_t polled = (fds.size() - 2) / 2;
    for (std::size_t i = 0; i < polled; ++i) {
      auto& c = conns[i];
      auto crev = fds[2 + 2 * i].revents, srev = fds[3 + 2 * i].revents;
      bool rst = false;
      if (c.server_cut) {
        // Whatever the client sends is dropped; its own close ends the connection.
        if ((crev & (POLLIN | POLLHUP | POLLERR)) && !pull(c.client, c.to_server, delay, rst)) {
          kill_conn(c, rst);
        }
        c.to_server = {};
        continue;
      }
      if (crev & (POLLIN | POLLHUP | POLLERR)) {
        auto before = c.to_server.q.size();
        if (!pull(c.client, c.to_server, delay, rst)) {
          if (!rst) push(c.server, c.to_server);
          if (!rst && !c.to_server.q.empty()) {
            // Sent before the close, not yet due (delay): delivered late all the same.
            ::close(c.client);
            c.client = -1;
            c.client_gone = true;
            continue;
          }
          kill_conn(c, rst);
          continue;
        }
        if (c.to_server.q.size() > before) {
          std::lock_guard lk(mu_);
          if (drop_armed_) {
            drop_armed_ = false;
            c.drop_pending = true;
            armed_request_.clear();
          }
          // A client may write a request in pieces (ZooKeeper's length prefix first).
          for (auto k = before; c.drop_pending && k < c.to_server.q.size(); ++k)
            armed_request_ += c.to_server.q[k].data;
        }
      }
      if (srev & (POLLIN | POLLHUP | POLLERR)) {
        auto before = c.to_client.q.size();
        if (!pull(c.server, c.to_client, delay, rst)) {
          kill_conn(c, rst);
          continue;
        }
        if (m == mode::drop_replies) {
          c.to_client.q.clear();
          c.to_client.bytes = 0;
        }
        if (c.drop_pending && c.to_client.q.size() > before) {
          ++dropped_;
          kill_conn(c, true);
          continue;
        }
      }
      if (!c.dead && !push_both(c)) kill_conn(c, true);
    }
  }
}

}  // namespace dlock::test
