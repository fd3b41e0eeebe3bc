// A release costs the same number of server requests whatever the queue behind it (issue 15,
// as issue 17 for the others): counted with etcd's own /metrics (grpc_server_handled_total,
// every RPC and stream the member finished), not timed. Each waiter watches only the key
// created just before its own, so a release wakes one waiter, never the herd.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "etcd/etcd_env.hpp"
#include "support/handoff_count.hpp"
#include "support/net.hpp"

namespace dlock::test {
namespace {

// Every RPC and stream the member finished.
double handled_total() { return etcd_metric_sum("grpc_server_handled_total"); }

TEST(etcd_scale, requests_per_release_do_not_grow_with_the_number_of_waiters) {
  // One session per waiter; a long TTL keeps keep-alive rounds (every TTL/3) out of the count.
  const auto url = "etcd://" + shared_etcd().address() + "/sc" + random_suffix() + "?ttl=60s";
  double small = 0;
  constexpr int small_runs = 3;
  for (int run = 0; run < small_runs; ++run) {
    small += requests_per_release(url, "scale10-" + random_suffix(), 10, 10, handled_total);
  }
  small /= small_runs;
  const double large =
      requests_per_release(url, "scale100-" + random_suffix(), 100, 100, handled_total);
  std::printf("etcd requests per release: %.2f with 10 waiters, %.2f with 100\n", small, large);
  EXPECT_LE(large, 1.5 * small) << small << " requests per release with 10 waiters, " << large
                                << " with 100";
}

}  // namespace
}  // namespace dlock::test
