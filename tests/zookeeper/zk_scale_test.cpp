// A release costs the same number of server requests whatever the queue behind it (issue 17):
// counted with the server's own `mntr` (zk_packets_received), not timed.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "support/handoff_count.hpp"
#include "zookeeper/zk_env.hpp"

namespace dlock::test {
namespace {

using namespace std::chrono_literals;

double packets_received() {
  auto text = zk_four_letter(shared_zk().port(), "mntr");
  const std::string key = "zk_packets_received\t";
  auto at = text.find(key);
  if (at == std::string::npos) throw std::runtime_error("no zk_packets_received in mntr");
  return std::stod(text.substr(at + key.size()));
}

// Each woken waiter decides from one getChildren (the children's names in sequence order),
// never reading the data of the entries that left while it waited: before, a waiter whose
// view predated k departures read k nodes, and 100 waiters cost ~9x what 10 did per release
// (5.7 against 50.5 packets in the measurement).
TEST(zk_scale, requests_per_release_do_not_grow_with_the_number_of_waiters) {
  // One session per waiter: no waiter learns a node's data from another's read (a shared
  // session cache hid most of the growth). A long session timeout keeps pings and renewals
  // out of the count.
  const auto url = zk_url(30s);
  double small = 0;
  constexpr int small_runs = 5;
  for (int run = 0; run < small_runs; ++run) {
    small += requests_per_release(url, "scale10-" + random_suffix(), 10, 10, packets_received, 1);
  }
  small /= small_runs;
  const double large =
      requests_per_release(url, "scale100-" + random_suffix(), 100, 100, packets_received, 1);
  std::printf("zookeeper packets per release: %.2f with 10 waiters, %.2f with 100\n", small, large);
  EXPECT_LE(large, 1.5 * small) << small << " packets per release with 10 waiters, " << large
                                << " with 100";
}

}  // namespace
}  // namespace dlock::test
