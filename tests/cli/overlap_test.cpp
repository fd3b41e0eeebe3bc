// Two (here: eight) `dlock run` processes on one name never overlap.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "cli_harness.hpp"

namespace dlock::test {
namespace {

using namespace std::chrono_literals;

TEST(CliRun, ProcessesOnOneNameNeverOverlap) {
  cli_sandbox box;
  std::string log = box.dir() + "/log";
  std::string script = box.dir() + "/critical.sh";
  // Appends are made under flock(1) so the file itself is never the source of interleaving.
  std::ofstream(script) << "flock \"$1.lk\" sh -c 'echo \"start $DLOCK_FENCING_TOKEN\" >> \"$0\"' "
                           "\"$1\"\n"
                           "sleep 0.05\n"
                           "flock \"$1.lk\" sh -c 'echo \"end $DLOCK_FENCING_TOKEN\" >> \"$0\"' "
                           "\"$1\"\n";
  constexpr int n = 8;
  std::vector<child_process> runs;
  for (int i = 0; i < n; ++i) {
    runs.push_back(box.start({"run", "cron/exclusive", "--", "sh", script, log}));
  }
  for (auto& r : runs) EXPECT_EQ(r.wait(120s), 0);

  std::istringstream in(read_file(log));
  std::vector<std::string> lines;
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  ASSERT_EQ(lines.size(), 2u * n) << read_file(log);
  unsigned long long last = 0;
  for (std::size_t i = 0; i < lines.size(); i += 2) {
    ASSERT_TRUE(lines[i].starts_with("start ")) << read_file(log);
    auto token = lines[i].substr(6);
    EXPECT_EQ(lines[i + 1], "end " + token) << "interleaved:\n" << read_file(log);
    auto t = std::stoull(token);
    EXPECT_GT(t, last) << "fencing tokens must increase";
    last = t;
  }
}

}  // namespace
}  // namespace dlock::test
