#include "fault/fault_backends.hpp"

#include <sqlite3.h>
#include <sys/stat.h>
#include <time.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>

#include "support/net.hpp"
#include "support/process.hpp"

namespace dlock::fault {
namespace {

// memory://NAME: threads of one process; no process or network fault applies.
class memory_fault final : public fault_backend {
 public:
  std::string url(const std::vector<std::uint16_t>&) override {
    return "memory://fault-" + name_ + "?ttl=" + std::to_string(ttl().count()) + "ms";
  }
  bool multi_process() const override { return false; }
  std::size_t orphans(const std::string&) override { return 0; }  // reported by the worker

 private:
  std::string name_ = test::random_suffix();
};

// Start time of `pid` (field 22 of /proc/PID/stat), or -1 if there is no such process.
long long start_time(long long pid) {
  auto f = test::proc_stat_fields(static_cast<pid_t>(pid));
  if (f.size() < 20 || f[0] == "Z" || f[0] == "X") return -1;
  return std::stoll(f[19]);
}

// sqlite:///dir/locks.db: separate processes on this host share one file.
class sqlite_fault final : public fault_backend {
 public:
  explicit sqlite_fault(const std::string& dir) : path_(dir + "/locks.db") {}
  std::string url(const std::vector<std::uint16_t>&) override {
    return "sqlite://" + path_ + "?ttl=" + std::to_string(ttl().count()) + "ms";
  }

  // A write lock (fcntl, as /proc/locks lists it) of `pid` on the database, its WAL or its
  // shared-memory index: in WAL mode every connection keeps read locks, only a writer (or a
  // checkpoint) takes write locks, and other writers wait for them.
  bool stalls_others(pid_t pid) const override {
    std::set<ino_t> files;
    for (const auto* suffix : {"", "-wal", "-shm"}) {
      struct stat st {};
      if (::stat((path_ + suffix).c_str(), &st) == 0) files.insert(st.st_ino);
    }
    std::ifstream in("/proc/locks");
    std::string line;
    while (std::getline(in, line)) {
      // "1: POSIX  ADVISORY  WRITE 1234 08:01:5678 120 120"
      std::istringstream f(line);
      std::string n, kind, mode, access, dev;
      long owner = 0;
      if (!(f >> n >> kind >> mode >> access >> owner >> dev)) continue;
      if (kind != "POSIX" || access != "WRITE" || owner != pid) continue;
      auto colon = dev.rfind(':');
      if (colon != std::string::npos && files.contains(std::stoul(dev.substr(colon + 1))))
        return true;
    }
    return false;
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
                       "SELECT s.id, CASE WHEN s.boot_id = ?2 THEN s.expires_boot_ms ELSE 0 END, "
                       "COALESCE(s.pid, 0), COALESCE(s.pid_start, 0) FROM dlock_entries e "
                       "LEFT JOIN dlock_sessions s ON s.id = e.session WHERE e.name = ?1",
                       -1, &s, nullptr);
    sqlite3_bind_text(s, 1, lock.c_str(), -1, SQLITE_TRANSIENT);
    std::string boot;
    std::getline(std::ifstream("/proc/sys/kernel/random/boot_id"), boot);
    sqlite3_bind_text(s, 2, boot.c_str(), -1, SQLITE_TRANSIENT);
    // Leases are on CLOCK_BOOTTIME of the boot they name.
    timespec ts{};
    ::clock_gettime(CLOCK_BOOTTIME, &ts);
    auto now = static_cast<std::int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1'000'000;
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

  // The lease ends in the table, as the conformance fixture's expire() does.
  void expire(const worker_session& ws) override {
    sqlite3* db = nullptr;
    if (sqlite3_open(path_.c_str(), &db) != SQLITE_OK) {
      sqlite3_close(db);
      throw std::runtime_error("cannot open " + path_);
    }
    sqlite3_busy_timeout(db, 5000);
    sqlite3_stmt* s = nullptr;
    sqlite3_prepare_v2(db, "UPDATE dlock_sessions SET expires_boot_ms = 0 WHERE id = ?1", -1, &s,
                       nullptr);
    sqlite3_bind_text(s, 1, ws.id.c_str(), -1, SQLITE_TRANSIENT);
    int rc = sqlite3_step(s);
    sqlite3_finalize(s);
    sqlite3_close(db);
    if (rc != SQLITE_DONE) throw std::runtime_error("cannot expire session " + ws.id);
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
    case fault::proxy_outage:
      return "outage";
    case fault::server_restart:
      return "server restart";
    case fault::server_restart_nosave:
      return "restart, no data";
    case fault::member_kill:
      return "kill member";
    case fault::member_freeze:
      return "freeze member";
    case fault::expire_holder:
      return "expire holder";
    case fault::expire_waiter:
      return "expire waiter";
    case fault::client_clock_step:
      return "clock step";
    case fault::cancel_wait:
      return "cancel racing wait";
    case fault::master_down_release:
      return "master down release";
    case fault::pooler:
      return "pooler";
    case fault::terminate_holder:
      return "server terminates";
    case fault::permit_holder:
      return "permit holder";
    case fault::permits_two:
      return "2 permits holder";
    case fault::leader:
      return "leader";
  }
  return "?";
}

bool needs_proxy(fault f) noexcept {
  return f == fault::proxy_blackhole || f == fault::proxy_delay || f == fault::proxy_reset ||
         f == fault::proxy_drop_reply || f == fault::proxy_outage ||
         f == fault::master_down_release;
}

bool needs_pooler(fault f) noexcept { return f == fault::pooler; }

std::uint32_t holders_allowed(fault f) noexcept { return f == fault::permits_two ? 2 : 1; }

std::chrono::milliseconds cell_ttl(fault f, const fault_backend& b) noexcept {
  if (f == fault::member_freeze) return b.member_freeze_ttl();
  return f == fault::proxy_outage && b.sessions_survive_reconnect() ? outage_ttl : b.ttl();
}

std::chrono::milliseconds outage_length(std::chrono::milliseconds ttl) noexcept {
  using std::chrono::milliseconds;
  return std::max(milliseconds{1500}, std::min(ttl / 2, milliseconds{3000}));
}

// Where the backend has semaphores (capabilities().permits).
std::vector<fault> with_permits(std::vector<fault> base) {
  base.push_back(fault::permit_holder);
  base.push_back(fault::permits_two);
  return base;
}

// Where the backend has elections (capabilities().values).
std::vector<fault> with_elections(std::vector<fault> base) {
  base.push_back(fault::leader);
  return base;
}

const std::vector<fault> process_faults{fault::none,
                                        fault::kill_holder,
                                        fault::stop_holder,
                                        fault::stop_holder_late_check,
                                        fault::expire_holder,
                                        fault::expire_waiter,
                                        fault::client_clock_step,
                                        fault::cancel_wait};

namespace {
[[noreturn]] void not_applicable(const char* what) {
  throw std::logic_error(std::string("fault backend: ") + what + " does not apply");
}
}  // namespace

void fault_backend::expire(const worker_session&) { not_applicable("expire"); }
void fault_backend::terminate(const worker_session&) { not_applicable("terminate"); }
std::vector<std::uint16_t> fault_backend::pooler_ports() { not_applicable("pooler_ports"); }
void fault_backend::stop_server(bool) { not_applicable("stop_server"); }
void fault_backend::start_server() { not_applicable("start_server"); }
std::string fault_backend::kill_member(int) { not_applicable("kill_member"); }
void fault_backend::restart_member() { not_applicable("restart_member"); }
std::string fault_backend::freeze_member(int) { not_applicable("freeze_member"); }
void fault_backend::thaw_member() { not_applicable("thaw_member"); }

std::vector<fault> with_proxy_faults(std::vector<fault> base) {
  for (auto f : {fault::proxy_blackhole, fault::proxy_delay, fault::proxy_reset,
                 fault::proxy_drop_reply, fault::proxy_outage})
    base.push_back(f);
  return base;
}

namespace {
std::vector<fault> plus(std::vector<fault> v, fault f) {
  v.push_back(f);
  return v;
}

// Server-side expiry ends a session before its timeout ran out (a lease row or key cut short,
// or a ZooKeeper session closed by a twin handle, as the conformance fixtures do): nothing a
// client can observe in advance, like a clock jump on the server.
const std::pair<const fault, std::string> lease_cut_short{
    fault::expire_holder,
    "the server ends the session before its timeout ran out: the next contender is granted at "
    "once, while the holder learns of it only at its next contact with the server (within "
    "TTL/3); the fence must refuse the stale holder's writes"};
}  // namespace

const std::vector<backend_row>& backend_table() {
  static const std::vector<backend_row> rows{
      {"memory",
       [](const std::string&) { return std::make_unique<memory_fault>(); },
       {fault::none, fault::cancel_wait}},
      {"sqlite",
       [](const std::string& dir) { return std::make_unique<sqlite_fault>(dir); },
       with_elections(with_permits(process_faults)),
       {lease_cut_short}},
      {"zk",
       make_zk_fault,
       with_elections(with_permits(with_proxy_faults(plus(process_faults, fault::server_restart)))),
       {lease_cut_short}},
      // The ensemble's own fault: the leader dies while a lock is held and others wait.
      {"zk-3", make_zk_ensemble_fault, {fault::member_kill, fault::member_freeze}},
      {"redis",
       make_redis_fault,
       with_elections(with_permits(with_proxy_faults(
           plus(plus(process_faults, fault::server_restart), fault::server_restart_nosave)))),
       {lease_cut_short,
        {fault::server_restart_nosave,
         "a single Redis server without persistence forgets every session, entry and fence "
         "counter on restart: all sessions end (holders see the loss), new sessions work, and "
         "fencing tokens start again from 1, so a resource fenced by older tokens refuses them"}}},
      {"redlock",
       make_redlock_fault,
       with_elections(plus(
           plus(with_proxy_faults(plus(process_faults, fault::member_kill)), fault::member_freeze),
           fault::master_down_release)),
       {lease_cut_short}},
      // Advisory mode refuses a pooled connection (postgres_edges_test), so only the lease
      // mode runs behind the pooler.
      {"postgres",
       make_postgres_fault,
       with_elections(
           with_permits(plus(plus(with_proxy_faults(plus(process_faults, fault::server_restart)),
                                  fault::terminate_holder),
                             fault::pooler))),
       {lease_cut_short}},
      {"postgres-advisory",
       make_postgres_advisory_fault,
       plus(with_proxy_faults(plus(process_faults, fault::server_restart)),
            fault::terminate_holder),
       {lease_cut_short}},
      {"mysql",
       make_mysql_fault,
       with_elections(
           with_permits(plus(with_proxy_faults(plus(process_faults, fault::server_restart)),
                             fault::terminate_holder))),
       {lease_cut_short}},
      // A restart re-arms every lease to TTL + the election timeout (docs/etcd.md): the
      // fixture's member runs a 250 ms one, so the next grant comes within TTL + 1 s.
      {"etcd",
       make_etcd_fault,
       with_elections(with_permits(with_proxy_faults(plus(process_faults, fault::server_restart)))),
       {lease_cut_short}},
      // The cluster's own fault: the leader dies while a lock is held and others wait.
      {"etcd-3", make_etcd_cluster_fault, {fault::member_kill, fault::member_freeze}},
      {"mysql-advisory",
       make_mysql_advisory_fault,
       plus(with_proxy_faults(plus(process_faults, fault::server_restart)),
            fault::terminate_holder),
       {lease_cut_short}},
  };
  return rows;
}

}  // namespace dlock::fault
