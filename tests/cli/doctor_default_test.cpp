// dlock doctor without a URL, on SQLite only (no servers, unlike doctor_test.cpp): it checks the
// backend every other command would use.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli_harness.hpp"

namespace dlock::test {
namespace {

using nlohmann::json;

// The README says so; a doctor that judged some other backend would vouch for the wrong one.
TEST(CliDoctorDefault, WithoutAUrlItChecksDlockUrlElseTheDefaultFile) {
  cli_sandbox box;
  auto r = box.run({"doctor", "--json"});
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(json::parse(r.output)["url"], "sqlite://" + box.state_dir() + "/locks.db");
  // As the first use of the default would, it creates the file (and its directory).
  EXPECT_TRUE(file_exists(box.state_dir() + "/locks.db"));

  child_process::options o;
  o.env = box.env();
  o.env["DLOCK_URL"] = box.url();
  child_process p({DLOCK_CLI_PATH, "doctor", "--json"}, o);
  std::string out;
  while (auto l = p.read_line(std::chrono::seconds{30})) out += *l + "\n";
  ASSERT_EQ(p.wait(std::chrono::seconds{30}), 0) << out;
  EXPECT_EQ(json::parse(out)["url"], box.url());
}

}  // namespace
}  // namespace dlock::test
