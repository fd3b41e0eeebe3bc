// The commands that end cleanly on a signal (run, elect, observe) read signals in one loop,
// with the signals blocked in every thread. A thread started before they are blocked can take
// a SIGTERM itself and kill dlock by the default action (exit 143, the lock's CMD not told):
// CI once saw `dlock observe` die so when a SIGTERM came right after its first line, from the
// thread that closed the session probing the lock name. A preloaded probe
// (thread_probe.cpp) records every thread created while SIGTERM was deliverable.
#include <gtest/gtest.h>
#include <signal.h>

#include "cli_harness.hpp"

namespace dlock::test {
namespace {

using namespace std::chrono_literals;

class CliSignalsBlockedFirst : public ::testing::Test {
 protected:
  std::string probe_file() const { return box.dir() + "/threads-with-sigterm"; }

  child_process start(const std::vector<std::string>& args) const {
    std::vector<std::string> argv{DLOCK_CLI_PATH};
    argv.insert(argv.end(), args.begin(), args.end());
    child_process::options o;
    o.env = box.env();
    o.env["LD_PRELOAD"] = DLOCK_THREAD_PROBE_PATH;
    o.env["DLOCK_THREAD_PROBE"] = probe_file();
    o.merge_stderr = true;
    return child_process(argv, o);
  }

  // Runs to completion; the exit status.
  int run(const std::vector<std::string>& args) const {
    auto p = start(args);
    while (p.read_line(30s)) {
    }
    return p.wait(30s).value_or(-1);
  }

  cli_sandbox box;
};

TEST_F(CliSignalsBlockedFirst, RunAndElectStartNoThreadThatCanTakeSigterm) {
  EXPECT_EQ(run({"run", "job", "--", "true"}), 0);
  EXPECT_EQ(run({"elect", "primary", "--", "true"}), 0);
  EXPECT_EQ(read_file(probe_file()), "");
}

TEST_F(CliSignalsBlockedFirst, ObserveStartsNoThreadThatCanTakeSigterm) {
  // Without a database (observing creates none), then with one.
  for (bool database : {false, true}) {
    SCOPED_TRACE(database ? "database exists" : "no database");
    if (database) {
      ASSERT_EQ(box.run({"run", "job", "--", "true"}).status, 0);
    }
    auto o = start({"observe", "primary"});
    auto first = o.read_line(30s);
    ASSERT_TRUE(first);
    EXPECT_NE(first->find("no leader"), std::string::npos) << *first;
    o.signal(SIGTERM);
    EXPECT_EQ(o.wait(30s), 0);
    EXPECT_EQ(read_file(probe_file()), "");
  }
}

// The probe itself: `dlock status` handles no signals, so its session's threads can take one.
TEST_F(CliSignalsBlockedFirst, TheProbeSeesAThreadThatCanTakeSigterm) {
  ASSERT_EQ(box.run({"run", "job", "--", "true"}).status, 0);
  run({"status", "job"});
  EXPECT_NE(read_file(probe_file()), "");
}

}  // namespace
}  // namespace dlock::test
