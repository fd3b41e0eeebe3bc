#include "fault/fault_backends.hpp"

#include <sqlite3.h>

#include <fstream>
#include <sstream>
#include <stdexcept>

#include "support/net.hpp"

namespace dlock::fault {
namespace {

// memory://NAME: threads of one process; no process or network fault applies.
class memory_fault final : public fault_backend {
 public:
  std::string url(std::uint16_t) override {
    return "memory://fault-" + name_ + "?ttl=" + std::to_string(ttl().count()) + "ms";
  }
  bool multi_process() const override { return false; }
  std::size_t orphans(const std::string&) override { return 0; }  // reported by the worker

 private:
  std::string name_ = test::random_suffix();
};

// Start time of `pid` (field 22 of /proc/PID/stat), or -1 if there is no such process.
long long start_time(long long pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(f, line)) return -1;
  auto close = line.rfind(')');
  if (close == std::string::npos) return -1;
  std::istringstream rest(line.substr(close + 2));
  std::string field;
  char state = '?';
  for (int i = 3; i <= 22 && rest >> field; ++i) {
    if (i == 3) state = field[0];
    if (i == 22) return state == 'Z' || state == 'X' ? -1 : std::stoll(field);
  }
  return -1;
}

// sqlite:///dir/locks.db: separate processes on this host share one file.
class sqlite_fault final : public fault_backend {
 public:
  explicit sqlite_fault(const std::string& dir) : path_(dir + "/locks.db") {}
  std::string url(std::uint16_t) override {
    return "sqlite://" + path_ + "?ttl=" + std::to_string(ttl().count()) + "ms";
  }

  // Rows of dlock_entries whose session is gone, past its lease, or whose process is dead
  // (checked here independently of the backend's own code).
  std::size_t orphans(const std::string& lock) override {
    sqlite3* db = nullptr;
    if (sqlite3_open_v2(path_.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
      sqlite3_close(db);
      throw std::runtime_error("cannot open " + path_);
    }
    sqlite3_busy_timeout(db, 5000);
    sqlite3_stmt* s = nullptr;
    sqlite3_prepare_v2(db,
                       "SELECT s.id, COALESCE(s.expires_ms, 0), COALESCE(s.pid, 0), "
                       "COALESCE(s.pid_start, 0) FROM dlock_entries e LEFT JOIN dlock_sessions s "
                       "ON s.id = e.session WHERE e.name = ?1",
                       -1, &s, nullptr);
    sqlite3_bind_text(s, 1, lock.c_str(), -1, SQLITE_TRANSIENT);
    auto now = std::chrono::duration_cast<std::chrono::milliseconds>(
                   std::chrono::system_clock::now().time_since_epoch())
                   .count();
    std::size_t n = 0;
    while (sqlite3_step(s) == SQLITE_ROW) {
      bool has_session = sqlite3_column_type(s, 0) != SQLITE_NULL;
      bool live = has_session && sqlite3_column_int64(s, 1) > now &&
                  start_time(sqlite3_column_int64(s, 2)) == sqlite3_column_int64(s, 3);
      if (!live) ++n;
    }
    sqlite3_finalize(s);
    sqlite3_close(db);
    return n;
  }

 private:
  std::string path_;
};

}  // namespace

const char* to_string(fault f) noexcept {
  switch (f) {
    case fault::none:
      return "none";
    case fault::kill_holder:
      return "kill-9 holder";
    case fault::stop_holder:
      return "SIGSTOP holder";
    case fault::stop_holder_late_check:
      return "SIGSTOP late-check";
    case fault::proxy_blackhole:
      return "blackhole";
    case fault::proxy_delay:
      return "delay";
    case fault::proxy_reset:
      return "reset";
    case fault::proxy_drop_reply:
      return "drop reply";
  }
  return "?";
}

bool needs_proxy(fault f) noexcept {
  return f == fault::proxy_blackhole || f == fault::proxy_delay || f == fault::proxy_reset ||
         f == fault::proxy_drop_reply;
}

const std::vector<fault> process_faults{fault::none, fault::kill_holder, fault::stop_holder,
                                        fault::stop_holder_late_check};

std::vector<fault> with_proxy_faults(std::vector<fault> base) {
  for (auto f :
       {fault::proxy_blackhole, fault::proxy_delay, fault::proxy_reset, fault::proxy_drop_reply})
    base.push_back(f);
  return base;
}

const std::vector<backend_row>& backend_table() {
  static const std::vector<backend_row> rows{
      {"memory",
       [](const std::string&) { return std::make_unique<memory_fault>(); },
       {fault::none}},
      {"sqlite", [](const std::string& dir) { return std::make_unique<sqlite_fault>(dir); },
       process_faults},
  };
  return rows;
}

}  // namespace dlock::fault
