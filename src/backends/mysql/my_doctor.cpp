#include "backends/mysql/my_doctor.hpp"

#include <string>

#include "backends/common/clock_check.hpp"
#include "backends/mysql/my_route.hpp"

namespace dlock::detail::my {
namespace {

constexpr const char* settings_sql =
    "SELECT @@innodb_flush_log_at_trx_commit, @@sync_binlog, @@log_bin, @@read_only, "
    "CAST(UNIX_TIMESTAMP(NOW(6)) * 1000 AS CHAR)";

check_finding durability(const std::string& flush, const std::string& sync_binlog,
                         const std::string& log_bin) {
  check_finding f{.check = "innodb_flush_log_at_trx_commit",
                  .guarantee = "fencing",
                  .value = "innodb_flush_log_at_trx_commit=" + flush +
                           ", sync_binlog=" + sync_binlog + ", log_bin=" + log_bin};
  if (flush != "1") {
    f.status = check_status::weakened;
    f.reason = "innodb_flush_log_at_trx_commit=" + flush +
               ": a crash can lose about the last second of commits, so a token handed out "
               "just before it can be handed out again (set it to 1)";
  } else if (log_bin == "1" && sync_binlog != "1") {
    f.status = check_status::weakened;
    f.reason = "sync_binlog=" + sync_binlog +
               ": after a crash the binary log (what replicas and point-in-time recovery "
               "replay) can miss the last grants (set it to 1)";
  } else {
    f.reason = "every grant's counter is flushed before it is answered";
  }
  return f;
}

// Without a binary log no replica can copy this server. With one, replicas are counted where
// the user may (SHOW REPLICA HOSTS needs REPLICATION MASTER ADMIN), and semi-synchronous
// replication is what keeps a failover from losing acknowledged grants.
check_finding replication(conn& c, const std::string& log_bin) {
  check_finding f{.check = "replication", .guarantee = "failover"};
  if (log_bin != "1") {
    f.value = "log_bin=0";
    f.reason =
        "the binary log is off: no replica copies this server, so nothing fails over to a "
        "copy that missed a commit";
    return f;
  }
  auto hosts = c.exec("SHOW REPLICA HOSTS");
  if (!hosts) {
    f.status = check_status::unknown;
    f.value = "log_bin=1";
    f.reason =
        "replicas not counted (SHOW REPLICA HOSTS needs REPLICATION MASTER ADMIN): a "
        "failover to an asynchronous replica can lose the last grants (semi-synchronous "
        "replication closes that)";
    return f;
  }
  auto count = hosts->rows.size();
  f.value = std::to_string(count) + " replicas";
  if (count == 0) {
    f.reason = "no replica is connected: nothing fails over to a copy that missed a commit";
    return f;
  }
  auto semi = c.exec("SELECT @@rpl_semi_sync_master_enabled");
  if (semi && semi->rows.size() == 1 && semi->text(0, 0) == "1") {
    f.value += ", semi-synchronous";
    f.reason = "semi-synchronous replication: a grant is on a replica before it is answered";
    return f;
  }
  f.status = check_status::weakened;
  f.reason = std::to_string(count) +
             " asynchronous replica(s): a failover to one can lose the last grants and hand "
             "their tokens out again (rpl_semi_sync_master_enabled closes that)";
  return f;
}

}  // namespace

// Whether the server sees this connection's own end (my_route.hpp), and what that means.
static check_finding route_finding(conn& c, bool advisory) {
  check_finding f{.check = "route", .guarantee = "exclusion"};
  auto direct = direct_route(c);
  if (!direct) {
    f.status = check_status::unknown;
    f.reason = "the server's view of this connection is unreadable: " + direct.error().message;
    return f;
  }
  f.value = *direct ? "direct" : "through a hop";
  if (*direct) {
    f.reason = advisory ? "one holder at a time: GET_LOCK belongs to the holder's connection and "
                          "is freed the moment it ends"
                        : "one holder at a time: a holder whose connection ends is freed as soon "
                          "as the server notices (milliseconds), else when its lease ends";
  } else if (!advisory) {
    f.reason =
        "one holder at a time: the server sees another end of this connection (a proxy, load "
        "balancer or NAT), so sessions are lease-only: a dead holder is freed after its TTL";
  } else {
    // The holder is told late, after another may be granted: the loss signal's promise.
    f.guarantee = "loss-signal";
    f.status = check_status::weakened;
    f.reason =
        "the server sees another end of this connection (a proxy, load balancer or NAT): a hop "
        "that closes only the server's side frees GET_LOCK while its holder still believes it "
        "holds, until one of its requests times out; connect directly, use lease mode, or "
        "count on the fencing token";
  }
  return f;
}

result<std::vector<check_finding>> findings(conn& c, bool advisory) {
  auto before = std::chrono::system_clock::now();
  auto r = c.exec(settings_sql);
  auto after = std::chrono::system_clock::now();
  if (!r) return fail(r.error());
  if (r->rows.size() != 1 || r->rows[0].size() != 5) {
    return fail(errc::backend_error, "doctor: settings query gave no row");
  }
  std::vector<check_finding> out;
  out.push_back(durability(r->text(0, 0), r->text(0, 1), r->text(0, 2)));
  if (r->text(0, 3) == "1") {
    out.push_back({.check = "read_only",
                   .guarantee = "exclusion",
                   .status = check_status::unsafe,
                   .reason = "the server is read-only (a replica?): it takes no lock",
                   .value = "read_only=1"});
  }
  out.push_back(replication(c, r->text(0, 2)));
  try {
    out.push_back(clock_finding(std::stod(r->text(0, 4)), before, after));
  } catch (const std::exception&) {
    out.push_back({.check = "clock", .status = check_status::unknown, .reason = "unreadable"});
  }
  out.push_back(route_finding(c, advisory));
  return out;
}

}  // namespace dlock::detail::my
