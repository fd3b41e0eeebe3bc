#pragma once
// What each backend gives the fault run, and the table of backends and faults it runs.
//
// Adding a backend takes a fixture class and one row in backend_table() (fault_backends.cpp):
//   1. A class deriving from fault_backend that starts its server(s) in the constructor (free
//      ports, temp data dirs; stops them in the destructor), returns their ports from
//      server_ports(), builds worker URLs in url(ports) -- each port may be a proxy in front of
//      the server of the same index -- counts raw leftovers in orphans(lock), and implements
//      the server-side operations its faults need (expire, stop/start, kill/restart member).
//   2. {"redis", make_redis_fault, {fault::none, ...}, {{fault::x, "why it cannot survive"}}}
// Faults needing a server (the proxy ones) are only valid for backends with server_ports().

#include <signal.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace dlock::fault {

enum class fault {
  none,                    // contention only: the baseline every backend must pass
  kill_holder,             // SIGKILL the holder inside its critical section
  stop_holder,             // SIGSTOP the holder past its TTL, SIGCONT after a newer grant
  stop_holder_late_check,  // same, holder checked its loss signal before pausing: the
                           // fence alone must refuse its stale write
  proxy_blackhole,         // the holder's link forwards nothing for TTL + 0.5 s
  proxy_delay,             // the holder's link delays every chunk by TTL / 4 for one TTL
  proxy_reset,             // RST the holder's connections
  proxy_drop_reply,        // a worker's next request is applied, its reply dropped (RST)
  proxy_outage,            // every worker's link RSTs every connection, old and new, for
                           // outage_length(TTL) (shorter than the lease, longer than the
                           // retry policy's attempts), then heals; the cell runs with
                           // cell_ttl() and holders pause past the outage
  server_restart,          // stop the server (its data kept), start it again
  server_restart_nosave,   // stop the server discarding its data, start it again
  member_kill,             // SIGKILL a minority member (ZooKeeper: the leader), restart it later
  member_freeze,           // SIGSTOP a minority member (ZooKeeper, etcd: the leader) for
                           // member_freeze_time while the workers contend, then SIGCONT: it
                           // must cost nothing (no hold, session or acquire lost to it)
  expire_holder,           // the server ends the holder's session (as the fixtures' expire())
  expire_waiter,           // the server ends a waiter's session
  client_clock_step,       // the holder's wall clock steps an hour (forward, then back), and
                           // a waiter's the other way (libfaketime in every worker)
  cancel_wait,             // workers cancel 31 acquires in 32, 0-120 us after they start, from
                           // another thread (racing the wait's requests), SIGPIPE at default
  master_down_release,     // Redlock: one master unreachable exactly while the holder
                           // releases, then back: its missed removal must be retried
  pooler,                  // the workers reach the server through a connection pooler
                           // (PgBouncer, transaction pooling); the holder is killed (-9)
                           // and SIGSTOPped past its TTL in turn
  permit_holder,           // the workers contend for a semaphore of one permit (not a mutex:
                           // the permit recipe, which must exclude alike); its holder is
                           // killed (-9) and SIGSTOPped past its TTL in turn
  permits_two,             // the same with a semaphore of two permits (no register: two hold
                           // at once), judged by the checker's limit rules
  leader,                  // the workers campaign in an election (the candidate recipe and
                           // values); the leader writes the register, and is killed (-9) and
                           // SIGSTOPped past its TTL in turn
  terminate_holder,        // the server terminates the holder's connection (PostgreSQL
                           // pg_terminate_backend, MariaDB KILL CONNECTION), three times in a
                           // row per injection, each after the next grant
};

const char* to_string(fault f) noexcept;
bool needs_proxy(fault f) noexcept;
// The workers' URLs point at the backend's pooler_ports() instead of its server_ports().
bool needs_pooler(fault f) noexcept;
// How many holders the cell's workers may have at once (its semaphore's permits; 1 for a lock).
std::uint32_t holders_allowed(fault f) noexcept;
class fault_backend;
// The lease a cell runs with: the backend's own (2 s), except for proxy_outage where sessions
// survive a reconnect (outage_ttl): where the connection is the session it ends at once
// anyway, and dead sessions' entries there may wait for their lease (PostgreSQL through the
// proxy), so a long one would only slow the cell.
std::chrono::milliseconds cell_ttl(fault f, const fault_backend& b) noexcept;
// proxy_outage's lease: long enough that a holder renewed up to TTL/3 before the outage still
// has more than a second left when its renewals (every TTL/10 while failing) reach the server
// again after it.
inline constexpr std::chrono::milliseconds outage_ttl{8000};
// How long member_freeze keeps a member stopped: two of the backends' own 2 s leases.
inline constexpr std::chrono::milliseconds member_freeze_time{4000};

// A member stopped by member_freeze (SIGSTOP), resumed by thaw() or, at the latest, when this
// goes: a failed run never leaves a server stopped behind it.
class frozen_member {
 public:
  frozen_member() = default;
  frozen_member(const frozen_member&) = delete;
  frozen_member& operator=(const frozen_member&) = delete;
  ~frozen_member() { thaw(); }
  void freeze(pid_t pid) {
    thaw();
    pid_ = pid;
    ::kill(pid_, SIGSTOP);
  }
  void thaw() {
    if (pid_ > 0) ::kill(pid_, SIGCONT);
    pid_ = -1;
  }

 private:
  pid_t pid_{-1};
};
// How long proxy_outage refuses connections: TTL/2, at most 3 s and at least 1.5 s. The retry
// policy's default 8 attempts (core/retry.hpp, session.hpp: backoff caps 10 ms .. 1 s) give
// up after at most 2.27 s (1.1 s on average), so a wait or request that is retried only that
// long ends inside the outage; a lease of outage_ttl outlives it.
std::chrono::milliseconds outage_length(std::chrono::milliseconds ttl) noexcept;

// What a worker reports about its session, for server-side expiry.
struct worker_session {
  std::string id;                         // dlock::session::id()
  std::int64_t zk_session{0};             // ZooKeeper only: session id and password
  std::string zk_password;                // raw bytes
  std::vector<std::int64_t> etcd_leases;  // etcd only: the session's leases
};

class fault_backend {
 public:
  virtual ~fault_backend() = default;
  // The URL a worker opens. `ports` has one port per server_ports() entry (a proxy in front of
  // that server, or the server itself), and is empty for a backend without a server.
  virtual std::string url(const std::vector<std::uint16_t>& ports) = 0;
  virtual std::vector<std::uint16_t> server_ports() const { return {}; }
  // false: the locks live in one process, so every contender is a thread of one worker.
  virtual bool multi_process() const { return true; }
  // The lease (ZooKeeper: session timeout) the workers' URLs ask for: 2 s, or the cell's
  // (cell_ttl; run_one sets it for the cell and restores it). url() must read it.
  std::chrono::milliseconds ttl() const { return ttl_; }
  void set_ttl(std::chrono::milliseconds t) { ttl_ = t; }
  // Whether a session outlives its connection: after a reconnect within its lease it keeps
  // its holds and its waits (Redis's session key, etcd's lease, a ZooKeeper session). false
  // where the connection is the session (PostgreSQL and MariaDB, both modes: a reconnect
  // finds it ended, by design) and where there is no server. proxy_outage judges by it:
  // where true, no hold or session may be lost and no acquire or release may give up across
  // the outage; where false, its holders are told lost, and the rest is judged as a reset.
  virtual bool sessions_survive_reconnect() const { return false; }
  // member_kill: how long a cluster may take to elect a new leader, which the bound on the
  // next grant allows for where a lost holder's lease outlives the election (etcd extends every
  // lease by its TTL when a new leader takes over). 0 for a backend that is not a cluster.
  virtual std::chrono::milliseconds leader_election() const { return {}; }
  // Entries of `lock` stored in the backend whose session is not live, read raw (not through
  // dlock). Called once every worker has exited; the run polls it for up to TTL + 1 s.
  // In-process backends (multi_process() false) have their worker report this instead.
  virtual std::size_t orphans(const std::string& lock) = 0;
  // Redlock: entries of `lock` stored on fewer than a majority of the masters (a removal that
  // missed a master, and was not retried, leaves one). 0 for other backends.
  virtual std::size_t minority_entries(const std::string&) { return 0; }

  // Server-side operations of the faults; the defaults throw (the fault does not apply).
  virtual void expire(const worker_session& s);
  // Ends the session's connection from the server side, as an administrator would.
  virtual void terminate(const worker_session& s);
  // Ports of a connection pooler in front of the server(s), started on first use.
  virtual std::vector<std::uint16_t> pooler_ports();
  virtual void stop_server(bool keep_data);
  virtual void start_server();
  // Kills a minority member (the k-th injection); returns what was killed.
  virtual std::string kill_member(int k);
  virtual void restart_member();
  // member_freeze: SIGSTOPs a minority member (the k-th injection), returns what; thaw_member
  // SIGCONTs it.
  virtual std::string freeze_member(int k);
  virtual void thaw_member();
  // member_freeze's lease: the backend's own (Redlock: its masters are independent, a majority
  // goes on at once), or longer where the frozen leader must first be replaced by an election
  // (ZooKeeper, etcd: outage_ttl, as their sessions ride out an outage).
  virtual std::chrono::milliseconds member_freeze_ttl() const { return ttl(); }
  // Whether every write is committed by one leader (ZooKeeper's ensemble, etcd's raft): with
  // the leader frozen, nothing commits until an election replaces it or it resumes.
  virtual bool commits_need_a_leader() const { return false; }
  // How long a killed member stays down (Redlock: past the TTL, its delayed-restart rule).
  virtual std::chrono::milliseconds member_down_time() const { return ttl(); }
  // Whether the stopped process `pid` holds a lock that stalls every other contender until it
  // resumes (SQLite: a write transaction's file lock, a documented limit, docs/sqlite.md). A
  // stop injected there tests the file lock, not the recipe: the run resumes it and stops it
  // again at its next pause.
  virtual bool stalls_others(pid_t) const { return false; }

 private:
  std::chrono::milliseconds ttl_{std::chrono::seconds{2}};
};

struct backend_row {
  std::string name;
  std::function<std::unique_ptr<fault_backend>(const std::string& scratch_dir)> make;
  std::vector<fault> faults;
  // Faults this backend cannot survive by design, with the reason: their runs are reported
  // (what the run observed), never counted as failures, and the README says so.
  std::map<fault, std::string> by_design{};
};

// Faults that apply to every backend whose contenders are separate processes.
extern const std::vector<fault> process_faults;
// process_faults plus the proxy faults, for backends with a server.
std::vector<fault> with_proxy_faults(std::vector<fault> base);

const std::vector<backend_row>& backend_table();

// The network backends (fault_zk.cpp, fault_redis.cpp, fault_sql.cpp, fault_etcd.cpp).
std::unique_ptr<fault_backend> make_zk_fault(const std::string& dir);
std::unique_ptr<fault_backend> make_zk_ensemble_fault(const std::string& dir);
std::unique_ptr<fault_backend> make_redis_fault(const std::string& dir);
std::unique_ptr<fault_backend> make_redlock_fault(const std::string& dir);
std::unique_ptr<fault_backend> make_postgres_fault(const std::string& dir);
std::unique_ptr<fault_backend> make_postgres_advisory_fault(const std::string& dir);
std::unique_ptr<fault_backend> make_mysql_advisory_fault(const std::string& dir);
std::unique_ptr<fault_backend> make_mysql_fault(const std::string& dir);
std::unique_ptr<fault_backend> make_etcd_fault(const std::string& dir);
std::unique_ptr<fault_backend> make_etcd_cluster_fault(const std::string& dir);

}  // namespace dlock::fault
