// The fault run's SQL backends: a PostgreSQL and a MariaDB server (restartable, data kept).
// Expiry and the orphan count are plain SQL as the server's superuser, never dlock.
#include <stdexcept>

#include "fault/fault_backends.hpp"
#include "support/mariadb_server.hpp"
#include "support/pgbouncer.hpp"
#include "support/postgres_server.hpp"

namespace dlock::fault {
namespace {

std::string query_of(std::chrono::milliseconds ttl) {
  return "?ttl=" + std::to_string(ttl.count()) + "ms";
}

class postgres_fault final : public fault_backend {
 public:
  explicit postgres_fault(bool advisory) : advisory_(advisory) {}
  std::string url(const std::vector<std::uint16_t>& ports) override {
    return "postgres://dlock:secret@127.0.0.1:" + std::to_string(ports.at(0)) + "/dlock" +
           query_of(ttl()) + (advisory_ ? "&mode=advisory" : "");
  }
  std::vector<std::uint16_t> server_ports() const override { return {server_.port()}; }
  // Both modes: the connection is the session, so sessions_survive_reconnect() stays false.
  // Lease mode: the client ends its session once its connection is found gone, even where
  // (as through the fault run's proxy) the server binds it to no process and other clients
  // wait for its lease (backends/common/session_conn.hpp; docs/postgresql.md: "holds are
  // never kept across a reconnect"). Advisory mode: the locks belong to the connection.
  // Rows of the lock whose session row is gone or whose lease lapsed (by the server's clock,
  // which is the clock the backend's leases use). In advisory mode: advisory locks (held or
  // "waiting" marks) on the lock's keys still held once every worker has exited.
  std::size_t orphans(const std::string& lock) override {
    if (advisory_) {
      return std::stoul(
          server_
              .query("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted"
                     " AND objsubid = 1 AND ((classid::bigint << 32) | objid::bigint) IN"
                     " (hashtextextended('dlock:' || $1, 0), hashtextextended('dlock:' || $1, 1))",
                     {lock})
              .at(0));
    }
    return std::stoul(server_
                          .query("SELECT count(*) FROM dlock.entries e WHERE e.name = $1 AND "
                                 "NOT EXISTS (SELECT 1 FROM dlock.sessions s WHERE s.id = "
                                 "e.session AND s.expires > clock_timestamp())",
                                 {lock})
                          .at(0));
  }
  void expire(const worker_session& ws) override {
    if (advisory_) {
      // The connection is the lease: ending it is ending the session.
      server_.query(
          "SELECT pg_terminate_backend(pid, 5000) FROM pg_stat_activity"
          " WHERE application_name = 'dlock:' || $1",
          {ws.id});
      return;
    }
    server_.query(
        "UPDATE dlock.sessions SET expires = clock_timestamp() - interval '1 second'"
        " WHERE id = $1",
        {ws.id});
  }
  void terminate(const worker_session& ws) override {
    if (advisory_) return expire(ws);
    server_.query(
        "SELECT pg_terminate_backend(pid, 5000) FROM dlock.sessions WHERE id = $1"
        " AND pid IS NOT NULL",
        {ws.id});
  }
  // A PgBouncer in transaction pooling mode in front of the server, the kind that hides
  // itself best from a client's probe: few server processes, handed out in turn.
  std::vector<std::uint16_t> pooler_ports() override {
    if (!pooler_) {
      pooler_ = std::make_unique<test::pgbouncer>(
          server_, "transaction", "default_pool_size = 4\nserver_round_robin = 1\n");
    }
    return {pooler_->port()};
  }
  void stop_server(bool) override { server_.stop(); }
  void start_server() override { server_.start(); }

 private:
  bool advisory_;
  test::postgres_server server_;
  std::unique_ptr<test::pgbouncer> pooler_;  // stopped before the server
};

class mysql_fault final : public fault_backend {
 public:
  explicit mysql_fault(bool advisory) : advisory_(advisory) {
    // Lists named locks (information_schema.METADATA_LOCK_INFO) for the advisory orphans.
    if (advisory_) server_.query("INSTALL SONAME 'metadata_lock_info'");
  }
  std::string url(const std::vector<std::uint16_t>& ports) override {
    return "mysql://dlock:secret@127.0.0.1:" + std::to_string(ports.at(0)) + "/dlock" +
           query_of(ttl()) + (advisory_ ? "&mode=advisory" : "");
  }
  std::vector<std::uint16_t> server_ports() const override { return {server_.port()}; }
  // Both modes: the connection is the session (docs/mysql.md: the lease mode's session row
  // holds the named lock dlock_session:<id> on its connection; advisory locks belong to the
  // connection), so a reconnect finds it ended: sessions_survive_reconnect() stays false.
  // In advisory mode: named locks (held or "waiting" marks) on the lock's hash still held once
  // every worker has exited.
  std::size_t orphans(const std::string& lock) override {
    if (advisory_) {
      return std::stoul(
          server_
              .query("SELECT count(*) FROM information_schema.METADATA_LOCK_INFO m,"
                     " (SELECT LEFT(SHA2(CONCAT('dlock:', ?), 256), 36) AS h) k"
                     " WHERE m.LOCK_TYPE = 'User lock' AND (m.TABLE_SCHEMA = CONCAT('dlock:', k.h)"
                     " OR m.TABLE_SCHEMA LIKE CONCAT('dlockw:', k.h, ':%'))",
                     {lock})
              .at(0));
    }
    return std::stoul(
        server_
            .query("SELECT count(*) FROM dlock.dlock_entries e WHERE e.name = CAST(? AS BINARY)"
                   " AND NOT EXISTS (SELECT 1 FROM dlock.dlock_sessions s WHERE s.id = e.session"
                   " AND s.expires_ms > CAST(UNIX_TIMESTAMP(NOW(6)) * 1000 AS SIGNED))",
                   {lock})
            .at(0));
  }
  void expire(const worker_session& ws) override {
    if (advisory_) {
      // The connection is the lease: ending it (found by its session lock) ends the session.
      auto id = server_.query("SELECT IS_USED_LOCK(CONCAT('dlock_session:', ?))", {ws.id}).at(0);
      if (!id.empty() && id.find_first_not_of("0123456789") == std::string::npos) {
        server_.query("KILL " + id);
      }
      return;
    }
    server_.query(
        "UPDATE dlock.dlock_sessions SET expires_ms = CAST(UNIX_TIMESTAMP(NOW(6)) * 1000 AS "
        "SIGNED) - 1000 WHERE id = ?",
        {ws.id});
  }
  void terminate(const worker_session& ws) override {
    if (advisory_) return expire(ws);
    auto id = server_.query("SELECT conn FROM dlock.dlock_sessions WHERE id = ?", {ws.id});
    if (!id.empty() && !id[0].empty() &&
        id[0].find_first_not_of("0123456789") == std::string::npos) {
      try {
        server_.query("KILL CONNECTION " + id[0]);
      } catch (const std::exception&) {  // already gone
      }
    }
  }
  void stop_server(bool) override { server_.stop(); }
  void start_server() override { server_.start(); }

 private:
  bool advisory_;
  test::mariadb_server server_;
};

}  // namespace

std::unique_ptr<fault_backend> make_postgres_fault(const std::string&) {
  return std::make_unique<postgres_fault>(false);
}
std::unique_ptr<fault_backend> make_postgres_advisory_fault(const std::string&) {
  return std::make_unique<postgres_fault>(true);
}
std::unique_ptr<fault_backend> make_mysql_fault(const std::string&) {
  return std::make_unique<mysql_fault>(false);
}
std::unique_ptr<fault_backend> make_mysql_advisory_fault(const std::string&) {
  return std::make_unique<mysql_fault>(true);
}

}  // namespace dlock::fault
