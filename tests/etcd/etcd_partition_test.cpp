// A client of etcd:// cut off by a blackholed proxy while it releases, or after its hold was
// lost (issue 12 items 6 and 15; the cases are in support/partition_cases.hpp). The etcd
// release runs on the caller's thread, its Txn cut off at release_timeout (bounded_remove).
#include <chrono>

#include "etcd/etcd_env.hpp"
#include "support/net.hpp"
#include "support/partition_cases.hpp"

namespace dlock::test {
namespace {

partition::env etcd_env(const std::string& prefix) {
  return {shared_etcd().port(),
          [prefix](std::uint16_t port, std::chrono::milliseconds ttl) {
            auto s = std::chrono::ceil<std::chrono::seconds>(ttl).count();
            return "etcd://127.0.0.1:" + std::to_string(port) + "/" + prefix +
                   "?ttl=" + std::to_string(s) + "s";
          },
          [prefix](const std::string& lock) {
            return shared_etcd().keys(prefix + "/" + lock + "/").size();  // contender keys
          }};
}

TEST(etcd_partition, a_cut_off_release_is_bounded_and_finished_in_the_background) {
  // A short request_timeout: the removal fails fast and is retried until the network heals.
  partition::release_cut_off_is_bounded_and_finished_in_the_background(
      etcd_env("pr" + random_suffix()), "res", std::chrono::seconds{10},
      std::chrono::milliseconds{500});
}

TEST(etcd_partition, a_cut_off_release_with_a_long_request_timeout_is_bounded_by_release_timeout) {
  // request_timeout at its default (5 s): only the inline attempt's deadline bounds unlock().
  partition::release_cut_off_is_bounded_and_finished_in_the_background(
      etcd_env("prl" + random_suffix()), "res", std::chrono::seconds{10}, std::chrono::seconds{5});
}

TEST(etcd_partition, releasing_a_lost_hold_does_not_wait_for_the_network) {
  partition::releasing_a_lost_hold_does_not_wait_for_the_network(etcd_env("pl" + random_suffix()),
                                                                 "res", std::chrono::seconds{2});
}

}  // namespace
}  // namespace dlock::test
