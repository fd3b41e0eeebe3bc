// gRPC aborts its host when its start cannot get a descriptor: a tester's `dlock run` on
// etcd:// at ulimit -n 6-8 died of SIGABRT (exit 134) inside session::open. A library never
// kills its host: the open is refused as any backend out of resources is (exit 69, naming it).
#include <gtest/gtest.h>

#include <string>

#include "../cli/cli_harness.hpp"
#include "support/etcd_server.hpp"
#include "support/net.hpp"

namespace dlock::test {
namespace {

TEST(EtcdDescriptors, AProcessOutOfDescriptorsIsRefusedNotAborted) {
#ifdef __SANITIZE_ADDRESS__
  GTEST_SKIP()
      << "an AddressSanitizer runtime needs descriptors of its own: the plain tree runs it";
#endif
  etcd_server server;
  cli_sandbox sb;
  const auto url = "etcd://" + server.address() + "/fd" + random_suffix();
  for (int n : {6, 7, 8}) {
    auto r =
        sb.run_through({"/bin/sh", "-c", "ulimit -n " + std::to_string(n) + "; exec \"$0\" \"$@\""},
                       {"run", "-w", "0", "--url", url, "job", "--", "true"});
    EXPECT_EQ(r.status, 69) << "ulimit -n " << n << ": " << r.output;
    EXPECT_NE(r.output.find("pen files"), std::string::npos)
        << "ulimit -n " << n << ": " << r.output;
  }
}

}  // namespace
}  // namespace dlock::test
