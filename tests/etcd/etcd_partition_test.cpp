// A client of etcd:// cut off by a blackholed proxy while it releases, or after its hold was
// lost (issue 12 items 6 and 15; the cases are in support/partition_cases.hpp). The etcd
// release runs on the caller's thread, its Txn cut off at release_timeout (bounded_remove).
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "etcd/etcd_env.hpp"
#include "support/net.hpp"
#include "support/partition_cases.hpp"
#include "support/poll.hpp"
#include "support/tcp_proxy.hpp"

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

// A mutex's release is a plain delete of its lease's key. One cut off may still reach the
// server after a later attempt (another HTTP/2 stream, handled on its own), so that key is not
// used again by the session on that lock: a late delete must never find a later hold there.
// A release answered at once frees the key for reuse (no lease granted per hold).
TEST(etcd_partition, a_key_whose_release_was_cut_off_is_not_used_again) {
  const auto prefix = "pk" + random_suffix();
  tcp_proxy px(shared_etcd().port());
  dlock::session_options o;
  o.release_timeout = std::chrono::milliseconds{300};
  o.request_timeout = std::chrono::milliseconds{500};
  auto hs = dlock::session::open(
      "etcd://127.0.0.1:" + std::to_string(px.port()) + "/" + prefix + "?ttl=10s", o);
  const auto keys = [&] { return shared_etcd().keys(prefix + "/res/"); };
  dlock::mutex m(hs, "res");
  m.lock();
  ASSERT_EQ(keys().size(), 1u);
  const auto first = keys()[0];
  px.blackhole();
  std::error_code ec;
  m.unlock(ec);
  EXPECT_EQ(ec, dlock::errc::backend_unavailable) << ec.message();
  std::this_thread::sleep_for(std::chrono::seconds{1});
  px.pass();
  ASSERT_TRUE(poll_until([&] { return keys().empty(); }, std::chrono::seconds{10}));
  m.lock();
  ASSERT_EQ(keys().size(), 1u);
  const auto second = keys()[0];
  EXPECT_NE(second, first) << "the key of a cut-off release was used again";
  m.unlock();
  m.lock();
  ASSERT_EQ(keys().size(), 1u);
  EXPECT_EQ(keys()[0], second) << "a release answered at once did not free its key";
  m.unlock();
}

TEST(etcd_partition, a_late_enqueue_leaves_no_ghost) {
  partition::a_late_enqueue_leaves_no_ghost(etcd_env("pg" + random_suffix()), "late");
}

TEST(etcd_partition, a_connection_ended_on_the_servers_side_only_frees_nothing_early) {
  partition::a_connection_ended_on_the_servers_side_only_frees_nothing_early(
      etcd_env("ps" + random_suffix()), "server-side", 3s);
}

TEST(etcd_partition, a_late_value_write_never_goes_back) {
  partition::a_late_value_write_never_goes_back(etcd_env("pv" + random_suffix()), "late-value");
}

}  // namespace
}  // namespace dlock::test
