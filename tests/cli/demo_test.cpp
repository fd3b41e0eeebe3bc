// The flash-sale demo: nothing oversold under the lock; overselling without it.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli_harness.hpp"

namespace dlock::test {
namespace {

using nlohmann::json;

TEST(CliDemo, NothingOversoldUnderTheLock) {
  cli_sandbox box;
  auto r = box.run({"demo", "flash-sale", "--workers", "4", "--stock", "40", "--json"});
  ASSERT_EQ(r.status, 0) << r.output;
  auto j = json::parse(r.output);
  EXPECT_EQ(j["sold"], 40);
  EXPECT_EQ(j["stock_left"], 0);
  EXPECT_EQ(j["oversold"], 0);
  EXPECT_EQ(j["stale_writes_refused"], 0);
  EXPECT_EQ(j["lock"], true);
}

TEST(CliDemo, HumanReportOnAGivenShop) {
  cli_sandbox box;
  std::string shop = box.dir() + "/shop.db";
  auto r = box.run({"demo", "flash-sale", "--workers", "3", "--stock", "15", "--shop", shop,
                    "--url", box.url()});
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("oversold              0"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("sold                  15"), std::string::npos) << r.output;
  EXPECT_TRUE(file_exists(shop));
}

TEST(CliDemo, WithoutTheLockItOversells) {
  cli_sandbox box;
  // Overselling is a race, so give it every chance: many workers, and a few attempts.
  long long oversold = 0;
  for (int attempt = 0; attempt < 3 && oversold == 0; ++attempt) {
    auto r =
        box.run({"demo", "flash-sale", "--no-lock", "--workers", "8", "--stock", "100", "--json"});
    auto j = json::parse(r.output);
    EXPECT_EQ(j["lock"], false);
    oversold = j["oversold"].get<long long>();
    // Scripts can tell: a sale that oversold exits 1, even when overselling was the point.
    EXPECT_EQ(r.status, oversold > 0 ? 1 : 0) << r.output;
    EXPECT_EQ(j["sold"].get<long long>(), 100 + oversold);
  }
  EXPECT_GT(oversold, 0);
}

}  // namespace
}  // namespace dlock::test
