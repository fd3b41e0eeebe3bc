// A client of redis:// cut off by a blackholed proxy: waiting, releasing, releasing a lost
// hold (issue 12 items 5, 6 and 15; the cases are in support/partition_cases.hpp).
#include "support/net.hpp"
#include "support/partition_cases.hpp"
#include "support/redis_server.hpp"

namespace dlock::test {
namespace {

redis_server& server() {
  static redis_server s;
  return s;
}

partition::env redis_env(const std::string& prefix) {
  return {server().port(),
          [prefix](std::uint16_t port, std::chrono::milliseconds ttl) {
            return "redis://127.0.0.1:" + std::to_string(port) +
                   "?ttl=" + std::to_string(ttl.count()) + "ms&prefix=" + prefix;
          },
          [prefix](const std::string& lock) { return server().entry_ids(prefix, lock).size(); }};
}

TEST(redis_partition, a_cut_off_waiter_is_told_session_expired_promptly) {
  partition::contender_cut_off_is_told_promptly(redis_env("pw" + random_suffix() + ":"), "res",
                                                std::chrono::seconds{2},
                                                partition::contender::waiting);
}

TEST(redis_partition, a_cut_off_poller_is_told_session_expired_promptly) {
  partition::contender_cut_off_is_told_promptly(redis_env("pp" + random_suffix() + ":"), "res",
                                                std::chrono::seconds{2},
                                                partition::contender::polling);
}

TEST(redis_partition, a_cut_off_poller_logging_in_anew_is_told_session_expired_promptly) {
  partition::contender_cut_off_is_told_promptly(redis_env("pn" + random_suffix() + ":"), "res",
                                                std::chrono::seconds{2},
                                                partition::contender::polling_reconnecting);
}

TEST(redis_partition, a_cut_off_release_is_bounded_and_finished_in_the_background) {
  // A short request_timeout: the removal fails fast and is retried until the network heals.
  partition::release_cut_off_is_bounded_and_finished_in_the_background(
      redis_env("pr" + random_suffix() + ":"), "res", std::chrono::seconds{30},
      std::chrono::milliseconds{500});
}

TEST(redis_partition, a_cut_off_release_with_a_long_request_timeout_is_bounded_by_release_timeout) {
  // request_timeout at its default (5 s): only the inline attempt's deadline bounds unlock().
  partition::release_cut_off_is_bounded_and_finished_in_the_background(
      redis_env("prl" + random_suffix() + ":"), "res", std::chrono::seconds{30},
      std::chrono::seconds{5});
}

TEST(redis_partition, releasing_a_lost_hold_does_not_wait_for_the_network) {
  partition::releasing_a_lost_hold_does_not_wait_for_the_network(
      redis_env("pl" + random_suffix() + ":"), "res", std::chrono::seconds{1});
}

TEST(redis_partition, a_late_enqueue_leaves_no_ghost) {
  partition::a_late_enqueue_leaves_no_ghost(redis_env("pg" + random_suffix() + ":"), "late");
}

TEST(redis_partition, a_late_value_write_never_goes_back) {
  partition::a_late_value_write_never_goes_back(redis_env("pv" + random_suffix() + ":"),
                                                "late-value");
}

TEST(redis_partition, a_connection_ended_on_the_servers_side_only_frees_nothing_early) {
  partition::a_connection_ended_on_the_servers_side_only_frees_nothing_early(
      redis_env("ps" + random_suffix() + ":"), "server-side", std::chrono::seconds{2});
}

}  // namespace
}  // namespace dlock::test
