// Semaphores (`dlock run --permits`) and elections (`dlock elect`, `leader`, `observe`) as
// real processes on every server backend: served where the backend's capabilities say so,
// refused with a reason elsewhere.
#include <gtest/gtest.h>

#include <csignal>
#include <dlock/session.hpp>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "backends_fixture.hpp"
#include "cli_harness.hpp"

namespace dlock::test {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

// --permits on every backend: granted where the backend has semaphores, refused with exit 64
// naming why where it has not (the README's table says which).
TEST_F(CliBackends, PermitsRunWhereTheBackendHasSemaphoresAndAreRefusedElsewhere) {
  cli_sandbox box;
  auto urls = every_mode();
  for (const auto& url : urls) {
    SCOPED_TRACE(url);
    auto probe = dlock::session::open(url);
    const bool refuses = !probe.capabilities().permits;
    probe.close();
    std::string name = "sem/job-" + random_suffix();
    auto r = box.run({"run", "--permits", "2", "-n", "--url", url, name, "--", "sh", "-c",
                      "echo token $DLOCK_FENCING_TOKEN"});
    if (refuses) {
      EXPECT_EQ(r.status, 64) << r.output;
      EXPECT_NE(r.output.find("has no semaphores"), std::string::npos) << r.output;
      // An outside tester was sent to the README's table, where MySQL has semaphores: the
      // refusal names the mode that lacks them and the one that has them.
      if (url.find("mode=advisory") != std::string::npos) {
        EXPECT_NE(r.output.find("the default lease mode (no ?mode) has semaphores"),
                  std::string::npos)
            << r.output;
      }
      EXPECT_EQ(r.output.find(url), r.output.rfind(url)) << "the URL said twice: " << r.output;
    } else {
      EXPECT_EQ(r.status, 0) << r.output;
      EXPECT_NE(r.output.find("token "), std::string::npos) << r.output;
    }
    EXPECT_EQ(box.run({"status", name, "--url", url}).status, 1) << "something was left behind";
  }
}

// Elections on every backend: `dlock elect` leads and `dlock leader` and `dlock observe` show
// it where the backend's entries carry values (its capabilities, as the library reports them);
// elsewhere all three are refused with exit 64 saying so, and nothing is left behind.
TEST_F(CliBackends, ElectionsRunWhereTheBackendHasValuesAndAreRefusedElsewhere) {
  cli_sandbox box;
  int refused = 0;
  for (const auto& url : every_mode()) {
    SCOPED_TRACE(url);
    auto probe = dlock::session::open(url);
    const bool has_values = probe.capabilities().values;
    probe.close();
    std::string name = "elect/job-" + random_suffix();
    if (!has_values) {
      ++refused;
      for (std::vector<std::string> args :
           {std::vector<std::string>{"elect", "-n", name, "--url", url, "--", "echo", "CMD-RAN"},
            std::vector<std::string>{"leader", name, "--url", url},
            std::vector<std::string>{"observe", name, "--url", url}}) {
        SCOPED_TRACE(args[0]);
        auto r = box.run(args);
        EXPECT_EQ(r.status, 64) << r.output;
        EXPECT_NE(r.output.find("has no elections"), std::string::npos) << r.output;
        if (url.find("mode=advisory") != std::string::npos) {
          EXPECT_NE(r.output.find("the default lease mode (no ?mode) has elections"),
                    std::string::npos)
              << r.output;
        }
        EXPECT_EQ(r.output.find(url), r.output.rfind(url)) << "the URL said twice: " << r.output;
        EXPECT_EQ(r.output.find("CMD-RAN"), std::string::npos) << r.output;
      }
      EXPECT_EQ(box.run({"status", name, "--url", url}).status, 1) << "something was left behind";
      continue;
    }
    auto leader = box.start({"elect", name, "--url", url, "--value", "node-a", "--", "sh", "-c",
                             "echo leading $DLOCK_FENCING_TOKEN; read x; exit 0"});
    auto observer = box.start({"observe", name, "--url", url, "--json"});
    auto line = leader.wait_for_line("leading ", 30s);
    ASSERT_TRUE(line);
    auto token = std::stoull(line->substr(8));
    auto shown = box.run({"leader", name, "--url", url, "--json"});
    ASSERT_EQ(shown.status, 0) << shown.output;
    auto j = json::parse(shown.output)["leader"];
    EXPECT_EQ(j["value"], "node-a") << shown.output;
    EXPECT_EQ(j["token"], token) << shown.output;
    // The observer started before or after the election: either way its last line so far
    // shows this leader, and the leader's end is its next line.
    json seen;
    ASSERT_TRUE(poll([&] {
      auto l = observer.read_line(100ms);
      if (l) seen = json::parse(*l);
      return seen.contains("leader") && !seen["leader"].is_null();
    })) << seen.dump();
    EXPECT_EQ(seen["leader"]["token"], token) << seen.dump();
    leader.close_stdin();
    EXPECT_EQ(leader.wait(30s), 0);
    auto gone = observer.read_line(30s);
    ASSERT_TRUE(gone);
    EXPECT_TRUE(json::parse(*gone)["leader"].is_null()) << *gone;
    observer.signal(SIGTERM);
    EXPECT_EQ(observer.wait(30s), 0);
    EXPECT_EQ(box.run({"leader", name, "--url", url}).status, 1);
  }
  // Redis and the advisory modes have no values today; if every backend gains them, this
  // test no longer covers the refusal and says so.
  EXPECT_GT(refused, 0) << "no backend without elections left to test the refusal on";
}

}  // namespace
}  // namespace dlock::test
