#include "backends/sqlite/local_process.hpp"

#include <fcntl.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <string_view>

namespace dlock::detail {
namespace {

struct stat_fields {
  char state{'?'};
  std::int64_t start{-1};
};

stat_fields read_stat(std::int64_t pid) {
  // Plain read(2): every listing reads this for each entry of another process.
  char path[48];
  std::snprintf(path, sizeof path, "/proc/%lld/stat", static_cast<long long>(pid));
  int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  char buf[1024];
  auto n = ::read(fd, buf, sizeof buf - 1);
  ::close(fd);
  if (n <= 0) return {};
  std::string_view line(buf, static_cast<std::size_t>(n));
  // The command name (field 2) may contain spaces and parentheses: skip past the last ')'.
  auto close = line.rfind(')');
  if (close == std::string_view::npos || close + 2 >= line.size()) return {};
  line.remove_prefix(close + 2);
  stat_fields out;
  for (int i = 3; i <= 22 && !line.empty(); ++i) {
    auto end = line.find(' ');
    auto field = line.substr(0, end);
    if (i == 3) out.state = field.empty() ? '?' : field[0];
    if (i == 22) {
      std::int64_t v = 0;
      auto [p, ec] = std::from_chars(field.data(), field.data() + field.size(), v);
      if (ec == std::errc{} && p != field.data()) out.start = v;
    }
    if (end == std::string_view::npos) break;
    line.remove_prefix(end + 1);
  }
  return out;
}

std::string host_id() {
  char name[256] = {};
  gethostname(name, sizeof name - 1);
  return std::string(name) + "/" + boot_id();
}

const std::string& this_host() {
  // Kept once whole: a boot id not read (no descriptor to spare) must not name this host for
  // the life of the process. Read on every liveness check, so the kept value is lock-free.
  static std::atomic<const std::string*> kept{nullptr};
  if (const auto* h = kept.load(std::memory_order_acquire)) return *h;
  static std::mutex mu;
  std::lock_guard lk(mu);
  if (const auto* h = kept.load(std::memory_order_acquire)) return *h;
  auto h = host_id();
  if (h.ends_with("/")) {
    thread_local std::string partial;
    partial = std::move(h);
    return partial;
  }
  const auto* whole = new std::string(std::move(h));  // for the life of the process
  kept.store(whole, std::memory_order_release);
  return *whole;
}

}  // namespace

namespace {
std::atomic<int> boot_id_errno_{0};
}  // namespace

std::string boot_id() {
  // Kept once read; a read that failed is tried again next time: a process short of
  // descriptors for a moment (EMFILE) could otherwise open no SQLite session ever again.
  static std::mutex mu;
  static std::string id;
  std::lock_guard lk(mu);
  if (id.empty()) {
    errno = 0;
    std::ifstream f("/proc/sys/kernel/random/boot_id");
    std::getline(f, id);
    if (id.empty()) boot_id_errno_ = errno != 0 ? errno : EIO;
  }
  return id;
}

int boot_id_error() { return boot_id_errno_.load(); }

std::int64_t boot_clock_ms() {
  timespec ts{};
  ::clock_gettime(CLOCK_BOOTTIME, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1'000'000;
}

process_id this_process() {
  return {this_host(), getpid(), read_stat(getpid()).start};  // not cached: fork() changes the pid
}

bool process_alive(const process_id& p) {
  // Only the host is compared: reading our own start time here (as this_process() does) cost
  // an open, a read and a close of /proc per entry of every listing.
  if (p.host != this_host() || p.pid <= 0) return true;  // cannot tell: trust the lease
  // /proc first: when it shows the process, it decides alone (a syscall fewer per entry).
  // When it cannot (gone, or hidden by hidepid), kill(0) tells gone from hidden.
  auto st = read_stat(p.pid);
  if (st.start >= 0) {
    if (st.state == 'Z' || st.state == 'X') return false;  // killed, not yet reaped
    return st.start == p.start;
  }
  return !(kill(static_cast<pid_t>(p.pid), 0) != 0 && errno == ESRCH);
}

}  // namespace dlock::detail
