// --metrics-file on every server backend, etcd and Redlock included (issue 16): a run that ran and
// a run refused (75) leave the same series whichever backend granted or refused them, and promtool
// accepts both.
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <sstream>

#include "backends_fixture.hpp"
#include "cli_harness.hpp"
#include "prom_samples.hpp"

namespace dlock::test {
namespace {

using namespace std::chrono_literals;

std::string outcome(const std::string& which) {
  return "dlock_run_last_outcome{command=\"run\",lock=\"job\",outcome=\"" + which + "\"}";
}

TEST_F(CliBackends, MetricsFileOnEveryServerBackend) {
  ASSERT_EQ(std::system("command -v promtool >/dev/null"), 0)
      << "promtool is missing (scripts/install-deps.sh installs the prometheus package)";
  auto urls = every_mode();
  for (const auto& u : srv_->newer_urls()) urls.push_back(u);
  for (const auto& url : urls) {
    SCOPED_TRACE(url);
    cli_sandbox box;
    const auto file = box.dir() + "/job.prom";
    auto first = box.run({"run", "--url", url, "--metrics-file", file, "job", "--", "true"});
    ASSERT_EQ(first.status, 0) << first.output;
    auto ran = prom_samples(read_file(file));
    EXPECT_EQ(ran[outcome("ran")], "1") << read_file(file);
    EXPECT_GT(std::stoull(ran["dlock_run_last_fencing_token{command=\"run\",lock=\"job\"}"]), 0u)
        << read_file(file);
    auto lint = "promtool check metrics < '" + file + "' > '" + file + ".lint' 2>&1";
    EXPECT_EQ(std::system(lint.c_str()), 0) << read_file(file + ".lint");

    auto holder = box.start({"run", "--url", url, "job", "--", "sh", "-c", "echo held; sleep 30"});
    ASSERT_TRUE(holder.wait_for_line("held", 30s));
    auto second = box.run({"run", "--url", url, "-n", "--metrics-file", file, "job", "--", "true"});
    EXPECT_EQ(second.status, 75) << second.output;
    auto refused = prom_samples(read_file(file));
    EXPECT_EQ(refused[outcome("conflict")], "1") << read_file(file);
    EXPECT_EQ(refused[outcome("ran")], "0") << read_file(file);
    EXPECT_EQ(std::system(lint.c_str()), 0) << read_file(file + ".lint");
    holder.signal(SIGTERM);
    (void)holder.wait(30s);
  }
}

}  // namespace
}  // namespace dlock::test
