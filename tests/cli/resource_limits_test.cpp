// `dlock run` at the process's resource limits: a shortage of descriptors or of threads is a
// passing one, reported as the backend being unavailable (exit 69, naming it), never as
// "permission denied" (77) or "usage" (64), and never the host's death in a client library
// (libzookeeper_mt asserts when it cannot start its threads; gRPC aborts without descriptors).
// ulimit -v does not mix with the sanitizers' shadow memory: this file runs in cli_edge only.
#include <gtest/gtest.h>

#include <string>

#include "cli_harness.hpp"
#include "support/net.hpp"

namespace dlock::test {
namespace {

// `sh -c "ulimit <flag> <n>; exec dlock ..."`.
std::vector<std::string> limited(const std::string& flag, int n) {
  return {"/bin/sh", "-c", "ulimit " + flag + " " + std::to_string(n) + "; exec \"$0\" \"$@\""};
}

// SQLite at ulimit -n 5..8: 77 or 64 before, "unable to open database file" or "cannot read
// this boot's id" with no cause; the boot id's failed read was kept for the process's life.
// A little higher, the grant came and then "pipe: Too many open files", which did not say
// whether CMD had run (a retester's). Raised until the run succeeds, each shortage is 69 and
// says so, and one of them is met after the grant.
TEST(CliResourceLimits, RunningOutOfDescriptorsIsUnavailableAndSaysSo) {
  cli_sandbox box;
  int after_grant = 0;
  bool ran = false;
  for (int n = 5; n <= 40 && !ran; ++n) {
    auto r = box.run_through(limited("-n", n),
                             {"run", "-w", "0", "--url", box.url(), "job", "--", "true"});
    if (r.status == 0) {
      ran = true;
      break;
    }
    EXPECT_EQ(r.status, 69) << "ulimit -n " << n << ": " << r.output;
    EXPECT_NE(r.output.find("pen files"), std::string::npos)
        << "ulimit -n " << n << ": " << r.output;
    if (r.output.find("cannot run 'true'") != std::string::npos) {
      ++after_grant;
      EXPECT_NE(r.output.find("was not started"), std::string::npos) << r.output;
    }
  }
  EXPECT_TRUE(ran) << "no run succeeded at ulimit -n 40";
  EXPECT_GT(after_grant, 0) << "no limit was met between the grant and CMD's start";
}

// ZooKeeper at ulimit -v 20-30 MB: its C client asserted on a failed pthread_create (exit 134).
// No server is needed: the client starts its threads before it connects.
TEST(CliResourceLimits, AZooKeeperClientThatCannotStartItsThreadsIsRefused) {
  cli_sandbox box;
  const auto url = "zk://127.0.0.1:" + std::to_string(free_port()) + "/x";
  for (int kib : {20000, 25000, 30000}) {
    auto r =
        box.run_through(limited("-v", kib), {"run", "-w", "0", "--url", url, "job", "--", "true"});
    EXPECT_EQ(r.status, 69) << "ulimit -v " << kib << ": " << r.output;
  }
}

}  // namespace
}  // namespace dlock::test
