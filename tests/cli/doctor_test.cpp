// Issue 16: `dlock doctor URL` judges each guarantee from the backend's capabilities and live
// checks, and session::open refuses set-ups unsafe for any lock (an evicting Redis, a replica).
#include <gtest/gtest.h>

#include <chrono>
#include <dlock/doctor.hpp>
#include <dlock/observer.hpp>
#include <mutex>
#include <nlohmann/json.hpp>

#include "backends_fixture.hpp"
#include "cli_harness.hpp"
#include "support/redis_sentinel.hpp"

namespace dlock::test {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

// The status of guarantee `name` in doctor's JSON.
std::string guarantee(const json& j, const std::string& name) {
  for (const auto& g : j["guarantees"]) {
    if (g["name"] == name) return g["status"];
  }
  return "(absent)";
}

// The status of check `name` in doctor's JSON.
std::string check(const json& j, const std::string& name) {
  for (const auto& c : j["checks"]) {
    if (c["check"] == name) return c["status"];
  }
  return "(absent)";
}

json doctor_json(const cli_sandbox& box, const std::string& url, int want_status = 0) {
  auto r = box.run({"doctor", url, "--json"});
  EXPECT_EQ(r.status, want_status) << r.output;
  try {
    return json::parse(r.output);
  } catch (const std::exception& e) {
    ADD_FAILURE() << e.what() << ": " << r.output;
    return json::object();
  }
}

// A server that does not answer is never judged: doctor must reach it before it says anything
// holds (found by a new user's trial: etcd's open reaches no member without a lease, and
// doctor said "holds" for a port where nothing listened).
TEST(CliDoctor, AServerThatDoesNotAnswerIsNeverJudged) {
  cli_sandbox box;
  const std::string closed = "127.0.0.1:1";  // nothing listens on port 1
  const std::vector<std::string> urls = {"redis://" + closed,
                                         "redlock://" + closed + ",127.0.0.1:2,127.0.0.1:3",
                                         "zk://" + closed + "/x?connect_timeout=1s",
                                         "etcd://" + closed,
                                         "postgres://u:p@" + closed + "/db",
                                         "postgres://u:p@" + closed + "/db?mode=advisory",
                                         "mysql://u:p@" + closed + "/db",
                                         "mysql://u:p@" + closed + "/db?mode=advisory"};
  // All at once: each spends its open's retries waiting (seconds), not computing.
  std::vector<child_process> runs;
  for (const auto& url : urls) runs.push_back(box.start({"doctor", url, "--require", "exclusion"}));
  for (std::size_t i = 0; i < urls.size(); ++i) {
    SCOPED_TRACE(urls[i]);
    auto status = runs[i].wait(60s);
    std::string out;
    while (auto line = runs[i].read_line(1s)) out += *line + "\n";
    EXPECT_EQ(status, 69) << out;
    EXPECT_EQ(out.find("holds"), std::string::npos) << out;
  }
}

// Fencing is weakened, as the durability check's own reason says: an OS crash can lose the
// fence counter's last bumps (synchronous=NORMAL), so a token can be handed out twice. The
// new-user trial found doctor saying "holds" next to that reason.
TEST(CliDoctor, SqliteDefaultHoldsEveryGuaranteeButInteropAndWeakensFencing) {
  cli_sandbox box;
  auto j = doctor_json(box, box.url());
  for (const auto& name : dlock::guarantee_names()) {
    SCOPED_TRACE(name);
    EXPECT_EQ(guarantee(j, name), name == "interop"   ? "no"
                                  : name == "fencing" ? "weakened"
                                                      : "holds")
        << j.dump(2);
  }
  EXPECT_EQ(check(j, "file-system"), "ok");
  EXPECT_EQ(check(j, "file-mode"), "ok");
  EXPECT_EQ(check(j, "write-access"), "ok");
  EXPECT_EQ(check(j, "durability"), "weakened");
  EXPECT_EQ(j["refused"], nullptr);
  // Human output: one line per guarantee, aligned, and the checks.
  auto r = box.run({"doctor", "--url", box.url()});
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("  fencing      weakened  "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("can be handed out again after the reboot"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("checks:"), std::string::npos) << r.output;
}

TEST(CliDoctor, RequireExitsOneWhenAGuaranteeDoesNotHoldAndRefusesUnknownNames) {
  cli_sandbox box;
  EXPECT_EQ(box.run({"doctor", box.url(), "--require", "exclusion,failover,fifo"}).status, 0);
  auto no = box.run({"doctor", box.url(), "--require", "exclusion,interop"});
  EXPECT_EQ(no.status, 1) << no.output;
  EXPECT_NE(no.output.find("* interop"), std::string::npos) << no.output;
  auto bad = box.run({"doctor", box.url(), "--require", "exclusion,speed"});
  EXPECT_EQ(bad.status, 64) << bad.output;
  EXPECT_NE(bad.output.find("unknown guarantee 'speed'"), std::string::npos) << bad.output;
  auto down = box.run({"doctor", "redis://127.0.0.1:1"});
  EXPECT_EQ(down.status, 69) << down.output;
}

TEST(CliDoctor, AnEvictingRedisIsRefusedAtOpenAndDoctorSaysWhy) {
  redis_server srv({.password = {},
                    .extra_args = {"--maxmemory", "100mb", "--maxmemory-policy", "allkeys-lru"}});
  auto url = "redis://" + srv.address();
  std::error_code ec;
  auto s = dlock::session::open(url, {}, ec);
  EXPECT_EQ(ec, make_error_code(dlock::errc::unsupported));
  cli_sandbox box;
  auto j = doctor_json(box, url, 1);
  EXPECT_NE(j["refused"].get<std::string>().find("maxmemory-policy allkeys-lru"), std::string::npos)
      << j.dump(2);
  EXPECT_EQ(guarantee(j, "exclusion"), "no");
  auto r = box.run({"doctor", url});
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.output.find("REFUSED at open"), std::string::npos) << r.output;
}

TEST(CliDoctor, ARedisReplicaIsRefusedAndAMasterWithAReplicaIsWeakened) {
  redis_server master;
  redis_server replica(
      {.password = {}, .extra_args = {"--replicaof", "127.0.0.1", std::to_string(master.port())}});
  cli_sandbox box;
  // The replica is refused at open, naming its master.
  std::error_code ec;
  auto s = dlock::session::open("redis://" + replica.address(), {}, ec);
  EXPECT_EQ(ec, make_error_code(dlock::errc::unsupported));
  EXPECT_NE(dlock::last_error_message().find("is a replica of 127.0.0.1:" +
                                             std::to_string(master.port())),
            std::string::npos)
      << dlock::last_error_message();
  // The master, once its replica is connected: failover weakened; the fixture's persistence
  // is off, so fencing is weakened too.
  for (int i = 0; i < 250 && master.integer({"EVAL",
                                             "return tonumber(string.match(redis.call('INFO', "
                                             "'replication'), 'connected_slaves:(%d+)'))",
                                             "0"}) < 1;
       ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  auto j = doctor_json(box, "redis://" + master.address());
  EXPECT_EQ(guarantee(j, "failover"), "weakened") << j.dump(2);
  EXPECT_EQ(guarantee(j, "fencing"), "weakened") << j.dump(2);
  EXPECT_EQ(guarantee(j, "exclusion"), "holds") << j.dump(2);
  // A restart without the data frees the locks before their holders hear of it.
  EXPECT_EQ(guarantee(j, "loss-signal"), "weakened") << j.dump(2);
  EXPECT_EQ(box.run({"doctor", "redis://" + master.address(), "--require", "failover"}).status, 1);
  EXPECT_EQ(box.run({"doctor", "redis://" + master.address(), "--require", "exclusion"}).status, 0);
}

// redis-sentinel://: failover holds only with ?replicas=N (and N replicas connected).
TEST(CliDoctor, ASentinelUrlHoldsFailoverOnlyWithReplicas) {
  sentinel_cluster c;
  cli_sandbox box;
  auto plain = doctor_json(box, c.url());
  EXPECT_EQ(guarantee(plain, "failover"), "weakened") << plain.dump(2);
  EXPECT_EQ(guarantee(plain, "loss-signal"), "weakened") << plain.dump(2);
  EXPECT_EQ(check(plain, "sentinel"), "weakened") << plain.dump(2);
  auto synced = doctor_json(box, c.url("?replicas=2"));
  EXPECT_EQ(guarantee(synced, "failover"), "holds") << synced.dump(2);
  EXPECT_EQ(check(synced, "replication"), "ok") << synced.dump(2);
  EXPECT_EQ(check(synced, "sentinel"), "ok") << synced.dump(2);
  auto r = box.run({"doctor", c.url("?replicas=1"), "--require", "failover"});
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("master 'mymaster' at 127.0.0.1:" + std::to_string(c.master().port())),
            std::string::npos)
      << r.output;
  // More replicas asked for than there are: every acquire would fail, and doctor says so.
  auto three = doctor_json(box, c.url("?replicas=3"), 1);
  EXPECT_EQ(guarantee(three, "failover"), "weakened") << three.dump(2);
  EXPECT_EQ(box.run({"doctor", c.url("?replicas=3"), "--require", "failover"}).status, 1);
  // ... and, no guarantee required, exits 1 all the same: no lock can be taken (a tester's
  // `dlock doctor URL && deploy` gate passed it).
  EXPECT_EQ(check(three, "replicas-connected"), "unsafe") << three.dump(2);
  EXPECT_EQ(box.run({"doctor", c.url("?replicas=3")}).status, 1);
}

// What weakens a guarantee is logged through the observer at open, as a warning.
TEST(CliDoctor, WeakeningsGoToTheObserversLogAtOpen) {
  struct log_keeper : dlock::observer {
    std::mutex mu;
    std::vector<std::string> warnings;
    void on_log(dlock::log_level level, std::string_view message) override {
      std::lock_guard lk(mu);
      if (level == dlock::log_level::warning) warnings.emplace_back(message);
    }
  };
  redis_server srv;  // persistence off
  auto keeper = std::make_shared<log_keeper>();
  auto s = dlock::session::open("redis://" + srv.address(), {.observer = keeper});
  s.close();
  std::lock_guard lk(keeper->mu);
  ASSERT_FALSE(keeper->warnings.empty());
  EXPECT_NE(keeper->warnings[0].find("persistence weakened (fencing)"), std::string::npos)
      << keeper->warnings[0];
}

TEST_F(CliBackends, DoctorOnSqlServersSeesCommitDurability) {
  cli_sandbox box;
  // The fixture runs PostgreSQL with fsync=off (for speed): fencing is weakened, saying why.
  auto pg = doctor_json(box, srv_->pg->url());
  EXPECT_EQ(guarantee(pg, "fencing"), "weakened") << pg.dump(2);
  EXPECT_NE(pg.dump().find("fsync is off"), std::string::npos) << pg.dump(2);
  auto reload = [&](const std::string& sql) {
    srv_->pg->query(sql);
    srv_->pg->query("SELECT pg_reload_conf()");
  };
  // (fsync=off is on its command line, which ALTER SYSTEM cannot override.)
  reload("ALTER SYSTEM SET synchronous_commit = off");
  pg = doctor_json(box, srv_->pg->url());
  reload("ALTER SYSTEM RESET ALL");
  EXPECT_EQ(guarantee(pg, "fencing"), "weakened") << pg.dump(2);
  EXPECT_NE(pg.dump().find("synchronous_commit=off: a crash can lose"), std::string::npos)
      << pg.dump(2);
  EXPECT_EQ(check(pg, "replication"), "ok") << pg.dump(2);
  EXPECT_EQ(check(pg, "clock"), "ok") << pg.dump(2);

  // MariaDB's fixture runs with innodb_flush_log_at_trx_commit=2.
  auto my = doctor_json(box, srv_->maria->url());
  EXPECT_EQ(guarantee(my, "fencing"), "weakened") << my.dump(2);
  EXPECT_NE(my.dump().find("innodb_flush_log_at_trx_commit=2"), std::string::npos) << my.dump(2);
  EXPECT_EQ(box.run({"doctor", srv_->maria->url(), "--require", "fencing"}).status, 1);
  EXPECT_EQ(box.run({"doctor", srv_->maria->url(), "--require", "exclusion"}).status, 0);
  srv_->maria->query("SET GLOBAL innodb_flush_log_at_trx_commit = 1");
  my = doctor_json(box, srv_->maria->url());
  srv_->maria->query("SET GLOBAL innodb_flush_log_at_trx_commit = 2");
  EXPECT_EQ(check(my, "innodb_flush_log_at_trx_commit"), "ok") << my.dump(2);

  // No binary log in the fixture: no replica can copy it.
  EXPECT_EQ(check(my, "replication"), "ok") << my.dump(2);
  EXPECT_EQ(guarantee(my, "failover"), "holds") << my.dump(2);

  auto zk = doctor_json(box, "zk://" + srv_->zk->hosts() + "/cli");
  EXPECT_EQ(guarantee(zk, "interop"), "holds") << zk.dump(2);
  EXPECT_EQ(guarantee(zk, "failover"), "holds") << zk.dump(2);
  EXPECT_EQ(check(zk, "session-timeout"), "ok") << zk.dump(2);
  // Judged against the timeout asked, not the TTL: a tester's session_timeout=6s was reported
  // as 15 s shortened to 6 s.
  zk = doctor_json(box, "zk://" + srv_->zk->hosts() + "/cli?session_timeout=6s");
  EXPECT_EQ(check(zk, "session-timeout"), "ok") << zk.dump(2);
}

// The advisory modes run the server checks too, on a connection of their own, and say what
// differs: PostgreSQL's tokens come from nextval() (not flushed before the answer), and the
// server's lock is the connection's.
TEST_F(CliBackends, DoctorOnAdvisoryModesRunsTheServerChecks) {
  cli_sandbox box;
  auto pg = doctor_json(box, srv_->pg->url("mode=advisory"));
  EXPECT_EQ(guarantee(pg, "fencing"), "weakened") << pg.dump(2);
  EXPECT_NE(pg.dump().find("nextval()"), std::string::npos) << pg.dump(2);
  EXPECT_EQ(check(pg, "replication"), "ok") << pg.dump(2);
  EXPECT_EQ(check(pg, "route"), "ok") << pg.dump(2);
  EXPECT_NE(pg.dump().find("belongs to the holder's connection"), std::string::npos) << pg.dump(2);

  auto my = doctor_json(box, srv_->maria->url("mode=advisory"));
  EXPECT_EQ(check(my, "innodb_flush_log_at_trx_commit"), "weakened") << my.dump(2);
  EXPECT_EQ(guarantee(my, "failover"), "holds") << my.dump(2);
  EXPECT_NE(my.dump().find("GET_LOCK belongs to the holder's connection"), std::string::npos)
      << my.dump(2);
}

}  // namespace
}  // namespace dlock::test
