// Every command that prints says so when its output cannot be written (a full disk) and exits
// 74 (EX_IOERR), as `dlock observe` does: a report that never reached its reader must not pass
// for one that did. The new-user trial found status, list, leader and doctor exiting 0 or 1,
// silent, with stdout on /dev/full.
#include <gtest/gtest.h>

#include <csignal>
#include <string>

#include "cli_harness.hpp"

namespace dlock::test {
namespace {

using namespace std::chrono_literals;

// dlock `args` with stdout on /dev/full; stderr comes back through the pipe.
cli_result run_to_full_disk(const cli_sandbox& box, const std::vector<std::string>& args) {
  return box.run_through({"/bin/sh", "-c", "exec \"$0\" \"$@\" >/dev/full"}, args);
}

TEST(CliOutputErrors, AFullDiskIsExit74WithTheReason) {
  cli_sandbox box;
  ASSERT_EQ(box.run({"run", "--url", box.url(), "job", "--", "true"}).status, 0);
  const std::vector<std::vector<std::string>> commands = {
      {"status", "--url", box.url(), "job"},
      {"status", "--url", box.url(), "--json", "job"},
      {"list", "--url", box.url()},
      {"leader", "--url", box.url(), "job"},
      {"doctor", "--url", box.url()},
      {"observe", "--url", box.url(), "job"},
      {"--help"},
      {"run", "--help"},
  };
  for (const auto& args : commands) {
    std::string shown;
    for (const auto& a : args) shown += " " + a;
    auto r = run_to_full_disk(box, args);
    EXPECT_EQ(r.status, 74) << "dlock" << shown << "\n" << r.output;
    EXPECT_NE(r.output.find("cannot write to stdout: No space left on device"), std::string::npos)
        << "dlock" << shown << "\n"
        << r.output;
    // Once: `observe` said it, then the exit's flush said "write failed" as well.
    EXPECT_EQ(r.lines().size(), 1u) << "dlock" << shown << "\n" << r.output;
  }
}

// A reader that left early is no error: `dlock list | head -1` ends as `ls | head -1` does
// (SIGPIPE, or exit 0 where it is ignored), without a word about stdout.
TEST(CliOutputErrors, AReaderThatLeftEarlyIsNoError) {
  cli_sandbox box;
  ASSERT_EQ(box.run({"run", "--url", box.url(), "job", "--", "true"}).status, 0);
  // `true` has exited long before dlock writes into the pipe.
  std::vector<std::string> argv{
      "/bin/sh", "-c", "{ sleep 0.5; \"$0\" list --url \"$1\"; echo \"status=$?\" >&2; } | true",
      DLOCK_CLI_PATH, box.url()};
  child_process::options o;
  o.env = box.env();
  o.merge_stderr = true;
  child_process p(argv, o);
  std::string out;
  while (auto line = p.read_line(60s)) out += *line + "\n";
  p.wait(60s);
  EXPECT_TRUE(out.find("status=0") != std::string::npos ||
              out.find("status=141") != std::string::npos)
      << out;
  EXPECT_EQ(out.find("cannot write"), std::string::npos) << out;
}

// A lock file at the file size limit (ulimit -f): SIGXFSZ killed dlock at once (exit 153, no
// message) and CMD got SIGKILL without its grace. The write now fails and is reported, and
// CMD runs with the disposition dlock was given (not ignored).
TEST(CliOutputErrors, TheFileSizeLimitIsReportedAndCmdKeepsItsSignal) {
  cli_sandbox box;
  auto r = box.run_through({"/bin/sh", "-c", "ulimit -f 4; exec \"$0\" \"$@\""},
                           {"run", "--url", box.url(), "job", "--", "true"});
  EXPECT_EQ(r.status, 69) << r.output;
  EXPECT_NE(r.output.find("file size limit"), std::string::npos) << r.output;
  auto cmd = box.run(
      {"run", "--url", box.url() + "-2", "job", "--", "sh", "-c", "grep SigIgn /proc/self/status"});
  EXPECT_EQ(cmd.status, 0) << cmd.output;
  // SigIgn is a hex mask, bit N-1 for signal N: SIGXFSZ's must be clear (the test runner may
  // ignore others of its own: a CI run's had signal 32 set).
  const auto at = cmd.output.find("SigIgn:");
  ASSERT_NE(at, std::string::npos) << cmd.output;
  const auto mask = std::stoull(cmd.output.substr(at + 7), nullptr, 16);
  EXPECT_EQ(mask & (1ull << (SIGXFSZ - 1)), 0u) << cmd.output;
}

}  // namespace
}  // namespace dlock::test
