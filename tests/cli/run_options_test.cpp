// dlock run as a cron job on many nodes: who holds a lock it did not get, -q/-v, and
// --hold-at-least / --hold-at-most (ShedLock's lockAtLeastFor / lockAtMostFor).
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "cli_harness.hpp"
#include "sqlite/raw_db.hpp"

namespace dlock::test {
namespace {

using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

TEST(CliRunOptions, AConflictNamesTheHolderUnlessQuiet) {
  cli_sandbox box;
  auto holder = box.start({"run", "busy", "--", "sh", "-c", "echo held; exec sleep 60"});
  ASSERT_TRUE(holder.wait_for_line("held", 30s));

  auto n = box.run({"run", "-n", "busy", "--", "true"});
  EXPECT_EQ(n.status, 75);
  ASSERT_EQ(n.lines().size(), 1u) << n.output;
  EXPECT_NE(n.output.find("is held (one try): holder token"), std::string::npos) << n.output;
  EXPECT_NE(n.output.find("pid " + std::to_string(holder.pid())), std::string::npos) << n.output;
  EXPECT_NE(n.output.find("token"), std::string::npos) << n.output;
  EXPECT_NE(n.output.find("(one try)"), std::string::npos) << n.output;

  // -w 0 is one try too, and says so (not "within 0").
  auto w0 = box.run({"run", "-w", "0", "busy", "--", "true"});
  EXPECT_EQ(w0.status, 75);
  EXPECT_NE(w0.output.find("(one try)"), std::string::npos) << w0.output;

  // -q: silent, like flock -n; the exit status alone tells.
  auto q = box.run({"run", "-q", "-n", "busy", "--", "true"});
  EXPECT_EQ(q.status, 75);
  EXPECT_EQ(q.output, "") << q.output;
  auto q0 = box.run({"run", "-q", "-n", "-E", "0", "busy", "--", "true"});
  EXPECT_EQ(q0.status, 0);
  EXPECT_EQ(q0.output, "");

  holder.signal(SIGTERM);
  EXPECT_EQ(holder.wait(30s), 128 + SIGTERM);
  auto v = box.run({"run", "-v", "-n", "--ttl", "7s", "busy", "--", "true"});
  EXPECT_EQ(v.status, 0) << v.output;
  EXPECT_NE(v.output.find("granted with fencing token"), std::string::npos) << v.output;
  // The lease in force (a server may grant another than --ttl: ZooKeeper clamps it).
  EXPECT_NE(v.output.find("(lease 7.0s)"), std::string::npos) << v.output;
}

TEST(CliRunOptions, ConflictExitCodeMustBeANumber) {
  cli_sandbox box;
  auto r = box.run({"run", "-E", "abc", "x", "--", "true"});
  EXPECT_EQ(r.status, 64);
  EXPECT_NE(r.output.find("abc"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("not in range"), std::string::npos) << r.output;
}

// A name that starts with '-' goes after a first --; the second -- is not taken for the
// command (a tester's `dlock run -- -x -- true` took the lock, then tried to run '--').
TEST(CliRunOptions, ANameStartingWithADashGoesAfterAFirstSeparator) {
  cli_sandbox box;
  auto r = box.run({"run", "--", "-x", "--", "sh", "-c", "echo ran-as-$DLOCK_NAME"});
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("ran-as--x"), std::string::npos) << r.output;
  auto e = box.run({"elect", "--", "-e", "--", "true"});
  EXPECT_EQ(e.status, 0) << e.output;
}

// Two nodes whose cron fires 1 s apart (clock skew): the job takes 100 ms. Without
// --hold-at-least the late node runs it again; with it, the late node finds it held.
TEST(CliRunOptions, HoldAtLeastCoversASkewedStart) {
  cli_sandbox box;
  auto early = box.run({"run", "-n", "nightly", "--", "true"});
  ASSERT_EQ(early.status, 0) << early.output;
  auto late = box.run({"run", "-n", "nightly", "--", "true"});
  EXPECT_EQ(late.status, 0) << "without --hold-at-least the late node runs the job again";

  auto started = steady::now();
  const std::string metrics = box.dir() + "/nightly2.prom";
  auto node_a = box.start({"run", "-n", "--hold-at-least", "3s", "--metrics-file", metrics,
                           "nightly2", "--", "sh", "-c", "echo ran-a; sleep 0.1"});
  ASSERT_TRUE(node_a.wait_for_line("ran-a", 30s));
  std::this_thread::sleep_for(1s);  // node B's cron fires a second later
  auto node_b = box.run({"run", "-n", "nightly2", "--", "echo", "ran-b"});
  EXPECT_EQ(node_b.status, 75) << node_b.output;
  EXPECT_EQ(node_b.output.find("ran-b"), std::string::npos);
  // Node A returns the job's status once the period is over, then the lock is free.
  EXPECT_EQ(node_a.wait(30s), 0);
  EXPECT_GE(steady::now() - started, 3s);
  std::string said;
  while (auto line = node_a.read_line(1s)) said += *line + "\n";
  EXPECT_EQ(said.find("was not kept"), std::string::npos) << said;
  EXPECT_NE(read_file(metrics).find(
                "dlock_run_last_hold_at_least_kept{command=\"run\",lock=\"nightly2\"} 1"),
            std::string::npos)
      << read_file(metrics);
  EXPECT_EQ(box.run({"run", "-n", "nightly2", "--", "true"}).status, 0);
}

// dlock stopped (SIGSTOP) past its TTL inside the --hold-at-least window, after CMD ended:
// another node runs the job within the window. The status stays CMD's (docs/cli.md), but dlock
// must say the window was broken, not blame the backend.
TEST(CliRunOptions, HoldAtLeastBrokenByAStoppedDlockIsReported) {
  cli_sandbox box;
  const std::string metrics = box.dir() + "/nightly3.prom";
  auto node_a = box.start({"run", "--ttl", "1s", "--hold-at-least", "8s", "--metrics-file", metrics,
                           "nightly3", "--", "echo", "ran-a"});
  ASSERT_TRUE(node_a.wait_for_line("ran-a", 30s));
  std::this_thread::sleep_for(300ms);
  node_a.signal(SIGSTOP);
  std::this_thread::sleep_for(2500ms);  // past the 1 s lease, inside the 8 s window
  auto node_b = box.run({"run", "-n", "nightly3", "--", "echo", "ran-b"});
  node_a.signal(SIGCONT);
  EXPECT_EQ(node_b.status, 0) << node_b.output;
  EXPECT_EQ(node_a.wait(30s), 0);
  std::string said;
  while (auto line = node_a.read_line(1s)) said += *line + "\n";
  EXPECT_NE(said.find("--hold-at-least 8s was not kept: lock 'nightly3' ended about"),
            std::string::npos)
      << said;
  EXPECT_NE(said.find("another node may have run the job"), std::string::npos) << said;
  EXPECT_EQ(said.find("backend unreachable?)"), std::string::npos)
      << "the generic release message blames the backend:\n"
      << said;
  EXPECT_NE(read_file(metrics).find(
                "dlock_run_last_hold_at_least_kept{command=\"run\",lock=\"nightly3\"} 0"),
            std::string::npos)
      << read_file(metrics);
}

// A terminating signal inside the --hold-at-least window, after CMD ended: dlock stops and
// releases as asked, so another node may run the job within the window. An outside tester
// found dlock silent, its metrics saying the window was kept.
TEST(CliRunOptions, HoldAtLeastCutByASignalIsReported) {
  cli_sandbox box;
  const std::string metrics = box.dir() + "/nightly4.prom";
  auto node_a = box.start({"run", "--hold-at-least", "8s", "--metrics-file", metrics, "nightly4",
                           "--", "echo", "ran-a"});
  ASSERT_TRUE(node_a.wait_for_line("ran-a", 30s));
  std::this_thread::sleep_for(500ms);  // CMD has ended; dlock keeps the window
  node_a.signal(SIGTERM);
  EXPECT_EQ(node_a.wait(30s), 0) << "the status is CMD's";
  std::string said;
  while (auto line = node_a.read_line(1s)) said += *line + "\n";
  EXPECT_NE(said.find("--hold-at-least 8s was not kept: dlock was stopped by signal " +
                      std::to_string(SIGTERM)),
            std::string::npos)
      << said;
  EXPECT_NE(said.find("another node may run the job within the window"), std::string::npos) << said;
  EXPECT_NE(read_file(metrics).find(
                "dlock_run_last_hold_at_least_kept{command=\"run\",lock=\"nightly4\"} 0"),
            std::string::npos)
      << read_file(metrics);
  EXPECT_EQ(box.run({"run", "-n", "nightly4", "--", "true"}).status, 0) << "released";
}

// The tester's next case (2026-12-06): dlock stopped while CMD ran and ended, its lease still
// valid when CMD did, and lapsed only while dlock stayed stopped. CMD ran under the lock, so
// the status is CMD's and the window is reported broken; dlock used to say the lock was lost
// while CMD ran (exit 70), judging by the clock when it ran again. The guard now tells it when
// CMD ended.
TEST(CliRunOptions, ACmdThatEndedWithinTheLeaseWhileDlockWasStoppedKeepsItsStatus) {
  cli_sandbox box;
  auto node_a = box.start({"run", "--ttl", "2s", "--hold-at-least", "8s", "halx", "--", "sh", "-c",
                           "echo go; sleep 0.3; exit 3"});
  ASSERT_TRUE(node_a.wait_for_line("go", 30s));
  node_a.signal(SIGSTOP);
  std::this_thread::sleep_for(3500ms);  // CMD ends at 0.3 s; the 2 s lease lapses meanwhile
  node_a.signal(SIGCONT);
  auto status = node_a.wait(30s);
  std::string said;
  while (auto line = node_a.read_line(1s)) said += *line + "\n";
  EXPECT_EQ(status, 3) << said;
  EXPECT_NE(said.find("--hold-at-least 8s was not kept"), std::string::npos) << said;
  EXPECT_EQ(said.find("lost while"), std::string::npos) << said;
}

TEST(CliRunOptions, HoldAtMostStopsAStuckJob) {
  cli_sandbox box;
  auto started = steady::now();
  auto r = box.run({"run", "--hold-at-most", "1s", "--grace", "1s", "stuck", "--", "sh", "-c",
                    "sleep 30 & wait"});
  auto took = steady::now() - started;
  // sh is killed by SIGTERM (its `&` job with it: the whole group is signalled).
  EXPECT_EQ(r.status, 128 + SIGTERM) << r.output;
  EXPECT_NE(r.output.find("--hold-at-most"), std::string::npos) << r.output;
  EXPECT_LT(took, 15s);
  EXPECT_EQ(box.run({"run", "-n", "stuck", "--", "true"}).status, 0);

  auto bad = box.run({"run", "--hold-at-least", "5s", "--hold-at-most", "1s", "x", "--", "true"});
  EXPECT_EQ(bad.status, 64);
  EXPECT_NE(bad.output.find("--hold-at-least"), std::string::npos) << bad.output;
}

}  // namespace
}  // namespace dlock::test

namespace dlock::test {
namespace {

// --permits N: at most N copies of a job at once across the fleet (a semaphore); the N+1th
// is refused as a conflict, a lock of the same name as a usage error naming the semaphore.
TEST(CliRunOptions, PermitsLetNCopiesRunAndRefuseTheNext) {
  cli_sandbox box;
  auto a = box.start({"run", "--permits", "2", "jobs", "--", "sh", "-c",
                      "echo token $DLOCK_FENCING_TOKEN; exec sleep 60"});
  auto b = box.start({"run", "--permits", "2", "jobs", "--", "sh", "-c",
                      "echo token $DLOCK_FENCING_TOKEN; exec sleep 60"});
  auto ta = a.wait_for_line("token", 30s);
  auto tb = b.wait_for_line("token", 30s);
  ASSERT_TRUE(ta && tb);
  EXPECT_NE(*ta, *tb) << "two permits with one fencing token";

  auto third = box.run({"run", "--permits", "2", "-n", "jobs", "--", "true"});
  EXPECT_EQ(third.status, 75) << third.output;
  EXPECT_NE(third.output.find("all 2 permits of semaphore 'jobs' are held (one try): holders "),
            std::string::npos)
      << third.output;
  EXPECT_NE(third.output.find("pid " + std::to_string(a.pid())), std::string::npos) << third.output;
  EXPECT_NE(third.output.find("pid " + std::to_string(b.pid())), std::string::npos) << third.output;
  auto status = box.run({"status", "jobs"});
  EXPECT_NE(status.output.find("semaphore 'jobs' on "), std::string::npos) << status.output;
  EXPECT_NE(status.output.find("held (2 of 2 permits taken)"), std::string::npos) << status.output;
  auto as_lock = box.run({"run", "-n", "jobs", "--", "true"});
  EXPECT_EQ(as_lock.status, 64) << as_lock.output;
  EXPECT_NE(as_lock.output.find("semaphore of 2 permits"), std::string::npos) << as_lock.output;
  auto other_limit = box.run({"run", "--permits", "3", "-n", "jobs", "--", "true"});
  EXPECT_EQ(other_limit.status, 64) << other_limit.output;
  EXPECT_NE(other_limit.output.find("3 permits"), std::string::npos) << other_limit.output;

  a.signal(SIGTERM);
  EXPECT_EQ(a.wait(30s), 128 + SIGTERM);
  auto now = box.run({"run", "--permits", "2", "-n", "jobs", "--", "true"});
  EXPECT_EQ(now.status, 0) << "a returned permit was not granted: " << now.output;
  for (auto [bad, why] : {std::pair{"0", "is out of range"},
                          {"1001", "is out of range"},
                          {"abc", "is not a whole number"},
                          {"2.5", "is not a whole number"}}) {
    auto r = box.run({"run", "--permits", bad, "jobs", "--", "true"});
    EXPECT_EQ(r.status, 64) << r.output;
    EXPECT_NE(r.output.find("'" + std::string(bad) + "' " + why + " (want a number of permits"),
              std::string::npos)
        << r.output;
  }
  b.signal(SIGTERM);
  EXPECT_EQ(b.wait(30s), 128 + SIGTERM);
}

// Opening the session counts against -w and -n (docs/cli.md) on SQLite too, whose open waits
// for another program's write transaction on the file: writing the session row waited the
// whole 5 s request timeout (`-w 500ms` and `-n` alike gave up after 5 s).
TEST(CliRunOptions, WaitAndNonblockBoundOpeningAWriteLockedSqliteFile) {
  cli_sandbox box;
  const std::string db = box.dir() + "/held.db";
  // A file dlock made (WAL): in a new rollback-journal file, the switch to WAL fails at once.
  ASSERT_EQ(box.run({"run", "--url", "sqlite://" + db, "k", "--", "true"}).status, 0);
  raw_db other(db);
  ASSERT_EQ(other.exec("BEGIN IMMEDIATE"), "");
  // -w 500ms gives the open about 0.5 s, -n about 2 s: generous slack, well under 5 s.
  const std::vector<std::pair<std::vector<std::string>, long long>> bounds = {
      {{"-w", "500ms"}, 3000}, {{"-n"}, 4000}};
  for (const auto& [bound, limit_ms] : bounds) {
    SCOPED_TRACE(bound[0]);
    std::vector<std::string> args = {"run"};
    args.insert(args.end(), bound.begin(), bound.end());
    args.insert(args.end(), {"--url", "sqlite://" + db, "k", "--", "echo", "CMD-RAN"});
    auto t0 = steady::now();
    auto r = box.run(args);
    auto took = std::chrono::duration_cast<std::chrono::milliseconds>(steady::now() - t0);
    EXPECT_EQ(r.status, 69) << r.output;
    EXPECT_EQ(r.output.find("CMD-RAN"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("database is locked"), std::string::npos) << r.output;
    EXPECT_LT(took.count(), limit_ms) << r.output;
  }
  other.exec("ROLLBACK");
}

}  // namespace
}  // namespace dlock::test
