// dlock run|elect --metrics-file: the last run in the Prometheus text format, replaced
// atomically after every run whatever its outcome, and accepted by Prometheus's own checker.
#include <dirent.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <sstream>
#include <thread>

#include "cli_harness.hpp"
#include "prom_samples.hpp"

namespace dlock::test {
namespace {

using namespace std::chrono_literals;

std::string series(const std::string& name, const std::string& lock, const std::string& extra = {},
                   const std::string& verb = "run") {
  return name + "{command=\"" + verb + "\",lock=\"" + lock + "\"" + extra + "}";
}

std::string outcome(const std::string& lock, const std::string& which,
                    const std::string& verb = "run") {
  return series("dlock_run_last_outcome", lock, ",outcome=\"" + which + "\"", verb);
}

// Prometheus's own linter of the text format (Debian package prometheus).
void expect_promtool_accepts(const std::string& path, std::string lint = {}) {
  if (lint.empty()) lint = path + ".lint";
  ASSERT_EQ(std::system("command -v promtool >/dev/null"), 0)
      << "promtool is missing (scripts/install-deps.sh installs the prometheus package)";
  auto cmd = "promtool check metrics < '" + path + "' > '" + lint + "' 2>&1";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << read_file(lint) << read_file(path);
}

// Files in `dir` other than those named.
std::vector<std::string> files_in(const std::string& dir) {
  std::vector<std::string> out;
  if (auto* d = ::opendir(dir.c_str())) {
    while (auto* e = ::readdir(d)) {
      std::string n = e->d_name;
      if (n != "." && n != "..") out.push_back(n);
    }
    ::closedir(d);
  }
  return out;
}

TEST(CliMetricsFile, ARunThatRanReportsItsStatusTimesAndToken) {
  cli_sandbox box;
  const auto dir = box.dir() + "/textfile";
  ASSERT_EQ(std::system(("mkdir -p '" + dir + "'").c_str()), 0);
  const auto file = dir + "/nightly.prom";
  ASSERT_EQ(box.run({"run", "--metrics-file", file, "nightly", "--", "sh", "-c", "exit 3"}).status,
            3);
  auto first = prom_samples(read_file(file));
  EXPECT_EQ(first[outcome("nightly", "ran")], "1") << read_file(file);
  EXPECT_EQ(first[outcome("nightly", "conflict")], "0");
  EXPECT_EQ(first[series("dlock_run_last_exit_code", "nightly")], "3");
  auto start = std::stod(first[series("dlock_run_last_start_timestamp_seconds", "nightly")]);
  auto end = std::stod(first[series("dlock_run_last_end_timestamp_seconds", "nightly")]);
  EXPECT_GT(start, 1.7e9);
  EXPECT_LE(start, end);
  EXPECT_GE(std::stod(first[series("dlock_run_last_hold_seconds", "nightly")]), 0.0);
  EXPECT_GE(std::stod(first[series("dlock_run_last_wait_seconds", "nightly")]), 0.0);
  auto token1 = std::stoull(first[series("dlock_run_last_fencing_token", "nightly")]);
  expect_promtool_accepts(file, box.dir() + "/lint");

  ASSERT_EQ(box.run({"run", "--metrics-file", file, "nightly", "--", "true"}).status, 0);
  auto second = prom_samples(read_file(file));
  EXPECT_EQ(second[series("dlock_run_last_exit_code", "nightly")], "0");
  EXPECT_GT(std::stoull(second[series("dlock_run_last_fencing_token", "nightly")]), token1);
  // Replaced by a rename: no temporary file is left beside it.
  EXPECT_EQ(files_in(dir), (std::vector<std::string>{"nightly.prom"}));
}

TEST(CliMetricsFile, AConflictAnErrorAndALossAreReportedToo) {
  cli_sandbox box;
  const auto file = box.dir() + "/job.prom";
  auto holder = box.start({"run", "busy", "--", "sh", "-c", "echo held; exec sleep 60"});
  ASSERT_TRUE(holder.wait_for_line("held", 30s));
  EXPECT_EQ(box.run({"run", "-n", "--metrics-file", file, "busy", "--", "true"}).status, 75);
  auto conflict = prom_samples(read_file(file));
  EXPECT_EQ(conflict[outcome("busy", "conflict")], "1") << read_file(file);
  EXPECT_EQ(conflict[series("dlock_run_last_exit_code", "busy")], "75");
  EXPECT_EQ(conflict.count(series("dlock_run_last_fencing_token", "busy")), 0u);
  expect_promtool_accepts(file);

  // The holder's session ended by an operator: the run is told lost and exits 70.
  auto loser = box.start(
      {"run", "--metrics-file", file, "lost-job", "--", "sh", "-c", "echo running; exec sleep 60"});
  ASSERT_TRUE(loser.wait_for_line("running", 30s));
  ASSERT_EQ(box.run({"unlock", "lost-job", "--force", "--yes"}).status, 0);
  EXPECT_EQ(loser.wait(30s), 70);
  auto lost = prom_samples(read_file(file));
  EXPECT_EQ(lost[outcome("lost-job", "lost")], "1") << read_file(file);
  EXPECT_EQ(lost[series("dlock_run_last_exit_code", "lost-job")], "70");
  expect_promtool_accepts(file);

  // An error (a malformed URL) still replaces the report.
  EXPECT_EQ(
      box.run({"run", "--url", "sqlite://x", "--metrics-file", file, "e", "--", "true"}).status,
      64);
  auto error = prom_samples(read_file(file));
  EXPECT_EQ(error[outcome("e", "error")], "1") << read_file(file);
  EXPECT_EQ(error[series("dlock_run_last_exit_code", "e")], "64");
  holder.signal(SIGTERM);
  EXPECT_EQ(holder.wait(30s), 128 + SIGTERM);
}

TEST(CliMetricsFile, ElectReportsLeadershipAndLabelsAreEscaped) {
  cli_sandbox box;
  const auto file = box.dir() + "/elect.prom";
  ASSERT_EQ(box.run({"elect", "--metrics-file", file, "a\"b\\c", "--", "true"}).status, 0);
  auto s = prom_samples(read_file(file));
  EXPECT_EQ(s[outcome("a\\\"b\\\\c", "ran", "elect")], "1") << read_file(file);
  expect_promtool_accepts(file);
}

TEST(CliMetricsFile, APathThatCannotBeWrittenIsRefusedBeforeTheJobRuns) {
  cli_sandbox box;
  auto r = box.run(
      {"run", "--metrics-file", box.dir() + "/missing/x.prom", "j", "--", "echo", "CMD-RAN"});
  EXPECT_EQ(r.status, 64);
  EXPECT_NE(r.output.find("missing"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("CMD-RAN"), std::string::npos) << r.output;
  auto d = box.run({"run", "--metrics-file", box.dir(), "j", "--", "true"});
  EXPECT_EQ(d.status, 64);
  EXPECT_NE(d.output.find("is a directory"), std::string::npos) << d.output;
  // An empty path is a mistake, not "no metrics file".
  auto e = box.run({"run", "--metrics-file", "", "j", "--", "echo", "CMD-RAN"});
  EXPECT_EQ(e.status, 64);
  EXPECT_NE(e.output.find("want a file name"), std::string::npos) << e.output;
  EXPECT_EQ(e.output.find("CMD-RAN"), std::string::npos) << e.output;
}

// A run frozen (SIGSTOP) past its lease reports it held the lock until the lease ended at the
// latest, not until it was continued and found out: a tester's 1 s lease read 2.3 s held.
TEST(CliMetricsFile, ALostRunsHoldEndsByItsLease) {
  cli_sandbox box;
  const auto file = box.dir() + "/frozen.prom";
  const auto url = box.url() + "?ttl=1s";
  auto holder = box.start({"run", "--url", url, "--metrics-file", file, "frozen", "--", "sh", "-c",
                           "echo running; exec sleep 60"});
  ASSERT_TRUE(holder.wait_for_line("running", 30s));
  const auto seen = std::chrono::steady_clock::now();
  holder.signal(SIGSTOP);
  // Another client is granted once the lease has ended; the holder stays frozen a while more.
  ASSERT_EQ(box.run({"run", "--url", url, "-w", "30s", "frozen", "--", "true"}).status, 0);
  std::this_thread::sleep_for(1s);
  const auto frozen_until = std::chrono::steady_clock::now();
  holder.signal(SIGCONT);
  EXPECT_EQ(holder.wait(30s), 70);
  auto m = prom_samples(read_file(file));
  ASSERT_EQ(m[outcome("frozen", "lost")], "1") << read_file(file);
  const double held = std::stod(m[series("dlock_run_last_hold_seconds", "frozen")]);
  const double until_continued = std::chrono::duration<double>(frozen_until - seen).count();
  // Held at most until the lease ended, which was before the other client's grant: at least
  // the last second of the freeze is not counted.
  EXPECT_LT(held, until_continued - 0.5) << read_file(file);
}

}  // namespace
}  // namespace dlock::test
