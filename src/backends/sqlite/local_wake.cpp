#include "backends/sqlite/local_wake.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

namespace dlock::detail {
namespace {

// Several waiters may wait for one entry (readers behind one writer): each takes a slot.
constexpr int slots = 8;

sockaddr_un make_addr(const std::string& name, socklen_t& len) {
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  // Abstract namespace: sun_path starts with a NUL byte; no file is created.
  auto n = std::min(name.size(), sizeof a.sun_path - 1);
  std::memcpy(a.sun_path + 1, name.data(), n);
  len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + n);
  return a;
}

}  // namespace

local_wake::local_wake(const std::string& db_path) {
  struct stat st {};
  char buf[64];
  if (::stat(db_path.c_str(), &st) == 0) {
    std::snprintf(buf, sizeof buf, "dlock/%llx:%llx/", static_cast<unsigned long long>(st.st_dev),
                  static_cast<unsigned long long>(st.st_ino));
  } else {
    std::snprintf(buf, sizeof buf, "dlock/unknown/");
  }
  scope_ = buf;
  send_fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
}

local_wake::~local_wake() {
  if (send_fd_ >= 0) ::close(send_fd_);
}

std::string local_wake::changed_key(std::string_view lock) {
  // FNV-1a: the same in every process and build (std::hash promises neither). A collision
  // only wakes another lock's observers, who look and wait again.
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : lock) h = (h ^ c) * 0x100000001b3ULL;
  char buf[24];
  std::snprintf(buf, sizeof buf, "~q%016llx", static_cast<unsigned long long>(h));
  return buf;
}

std::string local_wake::address(std::string_view entry_id, int slot) const {
  return scope_ + std::string(entry_id) + "#" + std::to_string(slot);
}

void local_wake::notify(std::string_view entry_id) const {
  const int fd = send_fd_;
  if (fd < 0) return;
  // Waiters take the lowest free slot, so an empty slot usually means no more waiters; a
  // waiter missed in a rare gap is still woken by its own poll.
  for (int slot = 0; slot < slots; ++slot) {
    socklen_t len = 0;
    auto a = make_addr(address(entry_id, slot), len);
    if (::sendto(fd, "w", 1, MSG_DONTWAIT, reinterpret_cast<sockaddr*>(&a), len) < 0 &&
        errno == ECONNREFUSED) {
      break;
    }
  }
}

local_wake::listener local_wake::listen(std::string_view entry_id) const {
  listener l;
  int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return l;
  for (int slot = 0; slot < slots; ++slot) {
    auto name = address(entry_id, slot);
    socklen_t len = 0;
    auto a = make_addr(name, len);
    if (::bind(fd, reinterpret_cast<sockaddr*>(&a), len) == 0) {
      l.fd_ = fd;
      l.self_ = name;
      return l;
    }
  }
  ::close(fd);
  return l;  // all slots taken: the caller polls
}

local_wake::listener::~listener() {
  if (fd_ >= 0) ::close(fd_);
}

bool local_wake::listener::wait(std::chrono::milliseconds timeout, std::stop_token stop) {
  if (fd_ < 0) return false;
  return wait_any(std::span<listener>(this, 1), timeout, std::move(stop));
}

bool local_wake::listener::wait_any(std::span<listener> ls, std::chrono::milliseconds timeout,
                                    std::stop_token stop) {
  std::vector<pollfd> p;
  const listener* first = nullptr;
  for (auto& l : ls) {
    if (l.fd_ < 0) continue;
    p.push_back({l.fd_, POLLIN, 0});
    if (!first) first = &l;
  }
  if (!first) return false;
  // A stop request wakes the first bound listener with a datagram of its own.
  std::stop_callback on_stop(stop, [first] {
    int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return;
    socklen_t len = 0;
    auto a = make_addr(first->self_, len);
    (void)::sendto(fd, "s", 1, MSG_DONTWAIT, reinterpret_cast<sockaddr*>(&a), len);
    ::close(fd);
  });
  // A deadline that passed since the caller computed `timeout` makes it negative, which poll
  // takes as "forever": a timed wait then never returned (seen under ASan, where the caller's
  // checks before it are slow).
  int r = ::poll(p.data(), p.size(), static_cast<int>(std::max<long long>(timeout.count(), 0)));
  if (r <= 0) return false;
  char buf[16];
  for (const auto& q : p) {
    if (!(q.revents & POLLIN)) continue;
    while (::recv(q.fd, buf, sizeof buf, MSG_DONTWAIT) > 0) {
    }
  }
  return true;
}

}  // namespace dlock::detail
