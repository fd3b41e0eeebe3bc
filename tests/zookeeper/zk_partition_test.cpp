// A client of zk:// cut off by a blackholed proxy: waiting, releasing, releasing a lost hold
// (issue 12 items 5, 6 and 15; the cases are in support/partition_cases.hpp).
#include <dlock/dlock.hpp>
#include <thread>

#include "support/net.hpp"
#include "support/partition_cases.hpp"
#include "support/poll.hpp"
#include "support/tcp_proxy.hpp"
#include "zookeeper/zk_env.hpp"

namespace dlock::test {
namespace {

partition::env zk_env(const std::string& chroot) {
  return {shared_zk().port(),
          [chroot](std::uint16_t port, std::chrono::milliseconds ttl) {
            return "zk://127.0.0.1:" + std::to_string(port) + chroot +
                   "?session_timeout=" + std::to_string(ttl.count()) + "ms";
          },
          [chroot](const std::string& lock) {
            raw_zk raw(shared_zk().hosts());
            return raw.children(chroot + lock_node(lock)).size();
          }};
}

TEST(zk_partition, a_cut_off_waiter_is_told_session_expired_promptly) {
  partition::contender_cut_off_is_told_promptly(zk_env("/pw-" + random_suffix()), "res",
                                                std::chrono::seconds{2},
                                                partition::contender::waiting);
}

TEST(zk_partition, a_cut_off_poller_is_told_session_expired_promptly) {
  partition::contender_cut_off_is_told_promptly(zk_env("/pp-" + random_suffix()), "res",
                                                std::chrono::seconds{2},
                                                partition::contender::polling);
}

TEST(zk_partition, a_cut_off_poller_logging_in_anew_is_told_session_expired_promptly) {
  partition::contender_cut_off_is_told_promptly(zk_env("/pn-" + random_suffix()), "res",
                                                std::chrono::seconds{2},
                                                partition::contender::polling_reconnecting);
}

TEST(zk_partition, a_cut_off_release_is_bounded_and_finished_in_the_background) {
  // A short request_timeout: the removal fails fast and is retried until the network heals.
  partition::release_cut_off_is_bounded_and_finished_in_the_background(
      zk_env("/pr-" + random_suffix()), "res", std::chrono::seconds{10},
      std::chrono::milliseconds{500});
}

TEST(zk_partition, a_cut_off_release_with_a_long_request_timeout_is_bounded_by_release_timeout) {
  // request_timeout at its default (5 s): only the inline attempt's deadline bounds unlock().
  partition::release_cut_off_is_bounded_and_finished_in_the_background(
      zk_env("/pr-l" + random_suffix()), "res", std::chrono::seconds{10}, std::chrono::seconds{5});
}

// A partition a little longer than the TTL: the holder is told lost at its lease's end, and
// the link heals before the server expires the session. The lock must still be freed while
// the holder keeps its session and hold objects (a tester's reconnected handle kept pinging,
// and the node of a hold told lost stayed until the holder closed its session).
TEST(zk_partition, a_hold_told_lost_is_freed_though_the_link_heals_before_the_server_expires_it) {
  const auto chroot = "/pz-" + random_suffix();
  auto env = zk_env(chroot);
  tcp_proxy px(env.server_port);
  auto s = dlock::session::open(env.url(px.port(), std::chrono::seconds{2}));
  dlock::mutex held(s, "res");
  held.lock();
  auto h = held.current_hold();
  px.blackhole();
  ASSERT_TRUE(
      poll_until([&] { return h.lost_token().stop_requested(); }, std::chrono::seconds{10}));
  px.pass();  // before the server's own expiry, which rounds up to a tick
  auto other = dlock::session::open(env.url(shared_zk().port(), std::chrono::seconds{2}));
  dlock::mutex next(other, "res");
  EXPECT_TRUE(next.try_lock_for(std::chrono::seconds{10}))
      << "the hold told lost is still on the server";
  EXPECT_TRUE(held.current_hold().state() == dlock::hold_state::lost);
}

// An open begun while the server cannot be reached: the C client retries inside the one
// attempt, so the attempt's start is not when the session was made. A tester's `dlock run -w
// 30s --ttl 3s` started while ZooKeeper was down lost its lease as soon as it was granted.
TEST(zk_partition, a_session_opened_after_an_outage_gets_its_whole_lease) {
  auto env = zk_env("/po-" + random_suffix());
  tcp_proxy px(env.server_port);
  px.reset();  // every connection refused for now
  std::jthread heal([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds{1500});
    px.pass();
  });
  auto s = dlock::session::open(env.url(px.port(), std::chrono::seconds{2}),
                                {.open_timeout = std::chrono::seconds{10}});
  dlock::mutex m(s, "res");
  m.lock();
  const auto left = m.current_hold().valid_until() - std::chrono::steady_clock::now();
  EXPECT_GT(left, std::chrono::seconds{1}) << "the lease was counted from before the open";
  m.unlock();
}

TEST(zk_partition, releasing_a_lost_hold_does_not_wait_for_the_network) {
  partition::releasing_a_lost_hold_does_not_wait_for_the_network(zk_env("/pl-" + random_suffix()),
                                                                 "res", std::chrono::seconds{2});
}

// Issue 12 item 6, the long cut: the C client fails a pending request once nothing arrived
// for 2/3 of the session timeout (its receive timeout), but the session lives on at the
// server. Before, that failed delete was retried at the next renewal at best (never, for a
// non-transient error): the node outlived the cut for as long as the session lived.
TEST(zk_partition, a_delete_failed_by_the_clients_timeout_is_retried_once_healed) {
  using namespace std::chrono_literals;
  using clk = std::chrono::steady_clock;
  const std::string chroot = "/pd-" + random_suffix();
  auto e = zk_env(chroot);
  tcp_proxy px(shared_zk().port());
  dlock::session_options o;
  o.release_timeout = 300ms;
  auto hs = dlock::session::open(e.url(px.port(), 6s), o);  // receive timeout 4 s
  dlock::mutex holder(hs, "res");
  holder.lock();
  auto ws = dlock::session::open(e.url(shared_zk().port(), 10s));
  dlock::mutex waiter(ws, "res");
  std::atomic<clk::rep> granted_at{0};
  std::jthread w([&](std::stop_token stop) {
    std::error_code ec;
    if (waiter.try_lock_until(clk::now() + 30s, stop, ec))
      granted_at = clk::now().time_since_epoch().count();
  });
  ASSERT_TRUE(poll_until([&] { return e.raw_entries("res") == 2; }, 10s));
  (void)dlock::inspect(hs, "res");  // a round trip: the server last heard of the session now
  px.blackhole();
  std::error_code unlock_ec;
  std::jthread u([&] { holder.unlock(unlock_ec); });
  std::this_thread::sleep_for(4800ms);  // past the receive timeout, within the session's
  px.pass();
  auto healed = clk::now();
  ASSERT_TRUE(poll_until([&] { return granted_at.load() != 0; }, 20s))
      << "the waiter was never granted: the holder's node stayed";
  auto after = clk::time_point{clk::duration{granted_at.load()}} - healed;
  EXPECT_LT(partition::ms(after), 1500)
      << "granted " << partition::ms(after) << " ms after the network healed";
  u.join();
  EXPECT_EQ(unlock_ec, dlock::errc::backend_unavailable) << unlock_ec.message();
}

TEST(zk_partition, a_late_enqueue_leaves_no_ghost) {
  partition::a_late_enqueue_leaves_no_ghost(zk_env("/pg-" + random_suffix()), "late");
}

TEST(zk_partition, a_late_value_write_never_goes_back) {
  partition::a_late_value_write_never_goes_back(zk_env("/pv-" + random_suffix()), "late-value");
}

TEST(zk_partition, a_connection_ended_on_the_servers_side_only_frees_nothing_early) {
  partition::a_connection_ended_on_the_servers_side_only_frees_nothing_early(
      zk_env("/ps-" + random_suffix()), "server-side", 4s);
}

}  // namespace
}  // namespace dlock::test
