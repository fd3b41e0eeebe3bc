#include "backends/sqlite/local_process.hpp"

#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <sstream>

namespace dlock::detail {
namespace {

struct stat_fields {
  char state{'?'};
  std::int64_t start{-1};
};

stat_fields read_stat(std::int64_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(f, line)) return {};
  // The command name (field 2) may contain spaces and parentheses: skip past the last ')'.
  auto close = line.rfind(')');
  if (close == std::string::npos || close + 2 >= line.size()) return {};
  std::istringstream rest(line.substr(close + 2));
  stat_fields out;
  std::string field;
  for (int i = 3; i <= 22 && rest >> field; ++i) {
    if (i == 3) out.state = field.empty() ? '?' : field[0];
    if (i == 22) out.start = std::stoll(field);
  }
  return out;
}

std::string host_id() {
  char name[256] = {};
  gethostname(name, sizeof name - 1);
  return std::string(name) + "/" + boot_id();
}

}  // namespace

const std::string& boot_id() {
  static const std::string id = [] {
    std::ifstream f("/proc/sys/kernel/random/boot_id");
    std::string s;
    std::getline(f, s);
    return s;
  }();
  return id;
}

std::int64_t boot_clock_ms() {
  timespec ts{};
  ::clock_gettime(CLOCK_BOOTTIME, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1'000'000;
}

process_id this_process() {
  static const std::string host = host_id();
  return {host, getpid(), read_stat(getpid()).start};  // not cached: fork() changes the pid
}

bool process_alive(const process_id& p) {
  if (p.host != this_process().host || p.pid <= 0) return true;  // cannot tell: trust the lease
  if (kill(static_cast<pid_t>(p.pid), 0) != 0 && errno == ESRCH) return false;
  auto st = read_stat(p.pid);
  if (st.state == 'Z' || st.state == 'X') return false;  // killed, not yet reaped
  return st.start < 0 ? true : st.start == p.start;
}

}  // namespace dlock::detail
