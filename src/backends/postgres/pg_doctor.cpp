#include "backends/postgres/pg_doctor.hpp"

#include <string>

#include "backends/common/clock_check.hpp"

namespace dlock::detail::pg {
namespace {

// pg_stat_replication lists the standbys streaming from this server (every user sees their
// rows, if not all their columns).
constexpr const char* settings_sql = R"sql(
SELECT current_setting('synchronous_commit'), current_setting('fsync'),
       pg_is_in_recovery()::text,
       (SELECT count(*) FROM pg_stat_replication)::text,
       current_setting('synchronous_standby_names'),
       (extract(epoch FROM clock_timestamp()) * 1000)::text)sql";

check_finding durability(const std::string& sync, const std::string& fsync) {
  check_finding f{.check = "synchronous_commit",
                  .guarantee = "fencing",
                  .value = "synchronous_commit=" + sync + ", fsync=" + fsync};
  if (fsync != "on") {
    f.status = check_status::weakened;
    f.reason = "fsync is off: a crash can lose or corrupt commits, and tokens with them";
  }
  if (sync == "off") {
    f.status = check_status::weakened;
    f.reason += (f.reason.empty() ? "" : "; ") +
                std::string(
                    "synchronous_commit=off: a crash can lose the last commits, so a "
                    "token handed out just before it can be handed out again");
  }
  // Tokens come in blocks under a bound that is flushed before any token of it is answered.
  if (f.reason.empty())
    f.reason = "every grant's token is under a bound flushed before it is answered";
  return f;
}

check_finding standbys(bool replica, const std::string& count, const std::string& names,
                       const std::string& sync) {
  check_finding f{.check = "replication",
                  .guarantee = "failover",
                  .value = (replica ? "standby, " : "primary, ") + count + " standbys"};
  if (replica) {
    f.status = check_status::unsafe;
    f.reason = "the server is a standby: it takes no writes (point the URL at the primary)";
  } else if (count == "0") {
    f.reason =
        "no standby streams from this server: nothing fails over to a copy that missed "
        "a commit";
  } else if (!names.empty() && (sync == "on" || sync == "remote_apply" || sync == "remote_write")) {
    f.reason = "synchronous standbys (" + names +
               "): a commit is on a standby before it is "
               "answered";
    f.value += ", synchronous_standby_names=" + names;
  } else {
    f.status = check_status::weakened;
    f.reason = count +
               " asynchronous standby(s): a failover to one can lose the last grants "
               "and hand their tokens out again (synchronous_standby_names closes that)";
  }
  return f;
}

}  // namespace

result<std::vector<check_finding>> findings(conn& c, bool pooled, bool direct) {
  auto before = std::chrono::system_clock::now();
  auto r = c.exec(settings_sql);
  auto after = std::chrono::system_clock::now();
  if (!r) return fail(r.error());
  if (r->count() != 1) return fail(errc::backend_error, "doctor: settings query gave no row");
  std::vector<check_finding> out;
  auto sync = r->text(0, 0);
  out.push_back(durability(sync, r->text(0, 1)));
  out.push_back(standbys(r->text(0, 2) == "true", r->text(0, 3), r->text(0, 4), sync));
  check_finding route{.check = "route", .guarantee = "exclusion"};
  if (pooled) {
    route.value = "pooled";
    route.reason =
        "one holder at a time; through a transaction pooler a dead holder is freed after its "
        "TTL, not when its connection ends; waiters poll";
  } else if (direct) {
    route.value = "direct";
    route.reason = "one holder at a time; a holder whose connection ends is freed at once";
  } else {
    route.value = "through a hop";
    route.reason =
        "one holder at a time; the server sees another end of this connection (a proxy or NAT), "
        "so sessions are lease-only: a dead holder is freed after its TTL";
  }
  out.push_back(std::move(route));
  try {
    out.push_back(clock_finding(std::stod(r->text(0, 5)), before, after));
  } catch (const std::exception&) {
    out.push_back({.check = "clock", .status = check_status::unknown, .reason = "unreadable"});
  }
  return out;
}

}  // namespace dlock::detail::pg
