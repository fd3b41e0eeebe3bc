// `dlock bench --scenario waiters` on etcd:// counts the member's requests per release from
// its /metrics (gRPC calls and streams started), as it does from redis' INFO and ZooKeeper's
// mntr, so that bench/compare's scale rows have a figure for etcd too (issue 17).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "../cli/cli_harness.hpp"
#include "support/etcd_server.hpp"
#include "support/net.hpp"

namespace dlock::test {
namespace {

TEST(EtcdBenchProbe, WaitersCountTheMembersRequestsPerRelease) {
  etcd_server server;
  cli_sandbox sb;
  const auto url = "etcd://" + server.address() + "/bp" + random_suffix() + "?ttl=30s";
  auto r = sb.run({"bench", "--url", url, "--scenario", "waiters", "--waiters", "10", "--duration",
                   "1s", "--json"});
  ASSERT_EQ(r.status, 0) << r.output;
  auto j = nlohmann::json::parse(r.output.substr(r.output.find('{')));
  const auto& m = j["metrics"];
  ASSERT_TRUE(m.contains("requests_per_release") && m["requests_per_release"].is_number())
      << r.output;
  // Each waiter's grant, release and session close, and no more than a few dozen: a count
  // that missed every call (0) or read the wrong counter (thousands) fails.
  const double per_release = m["requests_per_release"];
  EXPECT_GE(per_release, 2.0) << r.output;
  EXPECT_LE(per_release, 50.0) << r.output;
  EXPECT_NE(r.output.find("etcd gRPC calls"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace dlock::test
