// A member that refuses connections for a few seconds (restarted on its data) while a session
// holds: once it is back, the session's keep-alives must reach it again within a round and its
// release must go through at once (a tester's report: the channel stayed in TRANSIENT_FAILURE,
// its reconnects unseen, until the holder was told lost at its TTL).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <dlock/dlock.hpp>
#include <thread>

#include "etcd/etcd_env.hpp"
#include "support/etcd_server.hpp"
#include "support/net.hpp"
#include "support/poll.hpp"
#include "support/tcp_proxy.hpp"

namespace dlock::test {
namespace {

using namespace std::chrono_literals;
using clock = std::chrono::steady_clock;

long long ms(clock::duration d) {
  return static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(d).count());
}

TEST(etcd_reconnect, a_holder_keeps_its_hold_through_a_member_restart_and_releases_promptly) {
  etcd_server member;  // its own: the shared member must not go away under other tests
  constexpr auto ttl = 9s;
  constexpr auto keepalive = 3s;
  auto s = dlock::session::open("etcd://" + member.address() + "/rc?ttl=9s&keepalive=3s");
  dlock::mutex m(s, "l");
  m.lock();
  auto h = m.current_hold();
  std::this_thread::sleep_for(1s);  // a keep-alive round or two on the open connection first

  const auto down = clock::now();
  member.stop();  // "connection refused" from here
  std::this_thread::sleep_for(3s);
  member.start();  // returns once `etcdctl endpoint health` passes
  const auto up = clock::now();
  std::printf("member down %lld ms\n", ms(up - down));

  // A keep-alive sent after the member is back: within a round, plus the round's own wait.
  const bool renewed = poll_until(
      [&] { return h.valid_until() > up + ttl - 1s; },
      std::chrono::duration_cast<std::chrono::milliseconds>(keepalive + ttl / 6 + 1500ms));
  EXPECT_TRUE(renewed) << "no keep-alive reached the member within a round of its restart";
  if (renewed) std::printf("renewed within %lld ms of the restart\n", ms(clock::now() - up));

  // Past the TTL counted from the outage: a session none of whose keep-alives got through since
  // is told lost by then.
  std::this_thread::sleep_until(down + ttl + 1s);
  EXPECT_FALSE(h.lost_token().stop_requested()) << "the hold was lost although the member was "
                                                   "back well inside its TTL";
  EXPECT_EQ(h.state(), dlock::hold_state::held) << dlock::to_string(h.state());
  EXPECT_EQ(s.state(), dlock::session_state::live);

  const auto t0 = clock::now();
  std::error_code ec;
  m.unlock(ec);
  const auto took = clock::now() - t0;
  EXPECT_FALSE(ec) << ec.message();
  EXPECT_LT(took, 1s) << "the release took " << ms(took) << " ms";
  EXPECT_TRUE(member.keys("rc/l/").empty()) << "the released key is still there";
}

// A member 300 ms of round trip away (the proxy holds every chunk 150 ms each way): a connection
// attempt needs TCP, the HTTP/2 preface and the server's SETTINGS, more than the 100-250 ms that
// gRPC gave it while GRPC_ARG_MIN_RECONNECT_BACKOFF_MS (its minimum connect timeout) was 100 ms.
TEST(etcd_reconnect, a_member_behind_a_slow_link_is_reached) {
  tcp_proxy px(shared_etcd().port());
  px.delay(150ms);
  dlock::session_options o;
  o.request_timeout = 5s;
  const auto t0 = clock::now();
  auto s = dlock::session::open(
      "etcd://127.0.0.1:" + std::to_string(px.port()) + "/sl" + random_suffix() + "?ttl=10s", o);
  dlock::mutex m(s, "l");
  EXPECT_TRUE(m.try_lock_for(5s));
  m.unlock();
  std::printf("open, lock and unlock over the slow link: %lld ms\n", ms(clock::now() - t0));
}

}  // namespace
}  // namespace dlock::test
