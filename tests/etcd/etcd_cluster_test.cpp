// A three-member etcd cluster whose leader is killed (-9) while a lock is held and others wait
// (issue 15). The URL names all three members; the leader is first made the member the clients
// connect to first, so both the leader and the clients' connection are lost at once. The
// holder keeps its hold or is told lost before anyone else is granted; the waiters are granted
// afterwards in their order, with strictly increasing tokens.
#include "support/etcd_cluster.hpp"

#include <gtest/gtest.h>
#include <signal.h>

#include <atomic>
#include <dlock/dlock.hpp>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "support/net.hpp"
#include "support/poll.hpp"

namespace dlock::test {
namespace {

using namespace std::chrono_literals;
using clock = std::chrono::steady_clock;

struct grant_record {
  int waiter;
  std::uint64_t token;
  clock::time_point at;
};

TEST(etcd_cluster, the_leader_killed_while_held_and_waited_keeps_order_and_tokens) {
  etcd_cluster cluster(3);
  cluster.make_leader(0);
  const auto prefix = "ha" + random_suffix();
  const std::string name = "failover";
  const auto url = "etcd://" + cluster.hosts() + "/" + prefix + "?ttl=5s";
  auto contenders = [&] { return cluster.keys(prefix + "/" + name + "/").size(); };

  auto hs = dlock::session::open(url);
  dlock::mutex holder(hs, name);
  holder.lock();
  auto hold = holder.current_hold();
  std::mutex mu;
  std::optional<clock::time_point> lost_at;
  hold.on_state_change([&](dlock::hold_state s) {
    if (s != dlock::hold_state::lost) return;
    std::lock_guard g(mu);
    lost_at = clock::now();
  });

  constexpr int waiters = 3;
  std::vector<dlock::session> ws;
  for (int i = 0; i < waiters; ++i) ws.push_back(dlock::session::open(url));
  std::vector<grant_record> grants;
  std::vector<std::error_code> errors(waiters);
  std::vector<std::jthread> threads;
  for (int i = 0; i < waiters; ++i) {
    threads.emplace_back([&, i] {
      dlock::mutex m(ws[static_cast<std::size_t>(i)], name);
      if (!m.try_lock_until(clock::now() + 60s, {}, errors[static_cast<std::size_t>(i)])) return;
      {
        std::lock_guard g(mu);
        grants.push_back({i, m.token().value, clock::now()});
      }
      std::this_thread::sleep_for(50ms);
      m.unlock();
    });
    // Queued one after another: waiter i's key is created before waiter i+1's.
    ASSERT_TRUE(poll_until([&] { return contenders() == static_cast<std::size_t>(i) + 2; }));
  }

  // Still member 0 unless an election moved it meanwhile (a loaded machine): kill the leader.
  const auto leader = cluster.leader();
  ASSERT_TRUE(leader.has_value());
  cluster.kill(*leader);
  // Past a new leader's election (timeout 500 ms) and a few keep-alive rounds (TTL/3).
  ASSERT_TRUE(poll_until([&] { return cluster.leader().has_value(); }));
  std::this_thread::sleep_for(3s);
  {
    std::lock_guard g(mu);
    EXPECT_TRUE(grants.empty()) << "a waiter was granted while the holder still held";
  }
  const bool kept = hold.is_held();
  std::error_code ec;
  holder.unlock(ec);
  if (kept) {
    EXPECT_FALSE(ec) << "the hold was kept through the failover, then its release failed: "
                     << ec.message();
  }
  threads.clear();  // joins

  std::lock_guard g(mu);
  ASSERT_EQ(grants.size(), static_cast<std::size_t>(waiters))
      << errors[0].message() << " / " << errors[1].message() << " / " << errors[2].message();
  std::uint64_t last = hold.token().value;
  for (int i = 0; i < waiters; ++i) {
    const auto& r = grants[static_cast<std::size_t>(i)];
    EXPECT_EQ(r.waiter, i) << "waiters granted out of their order";
    EXPECT_GT(r.token, last) << "tokens did not strictly increase";
    last = r.token;
  }
  if (!kept) {
    ASSERT_TRUE(lost_at.has_value()) << "the hold ended without a loss signal";
    EXPECT_LE(*lost_at, grants.front().at) << "a waiter was granted before the holder was told";
  }
  std::printf("holder %s the failover; tokens %llu then %llu..%llu\n", kept ? "kept" : "lost",
              static_cast<unsigned long long>(hold.token().value),
              static_cast<unsigned long long>(grants.front().token),
              static_cast<unsigned long long>(grants.back().token));

  // The killed member comes back as a follower; nothing is left behind once all close.
  cluster.start(*leader);
  hs.close();
  for (auto& s : ws) s.close();
  EXPECT_TRUE(poll_until([&] { return cluster.keys(prefix + "/").empty(); }, 10s));
}

// The cluster stays available through a leader kill (two of three members answer after an
// election of about 500 ms here), so holders with TTL 2 s must keep their holds: their
// keep-alive rounds are cut off and retried within a sixth of the TTL, and timed from each
// round's start. A round held by a member during the election used to take half the TTL,
// and the retry after it came too late for the lease on the client's clock: holders were
// told lost though the cluster kept their leases (2 of 9 in a trial of this sequence; the
// fault run's etcd-3 row failed on it now and then).
TEST(etcd_cluster, holders_keep_their_holds_through_two_leader_kills) {
  etcd_cluster cluster(3);
  const auto prefix = "kk" + random_suffix();
  const auto url = "etcd://" + cluster.hosts() + "/" + prefix + "?ttl=2s";
  constexpr int holders = 3;
  std::vector<dlock::session> ss;
  std::vector<std::unique_ptr<dlock::mutex>> ms;
  std::vector<dlock::hold> holds;
  for (int i = 0; i < holders; ++i) {
    ss.push_back(dlock::session::open(url));
    ms.push_back(std::make_unique<dlock::mutex>(ss.back(), "h" + std::to_string(i)));
    ms.back()->lock();
    holds.push_back(ms.back()->current_hold());
  }
  // The longest time from a kill until a leader was known (an upper bound: etcdctl's own
  // start-up counts too). A loaded machine can take longer than the client can ride through
  // (about TTL/2: renewals every TTL/3, each retried within TTL/6); a loss is no fault then.
  clock::duration leaderless{};
  for (int k = 0; k < 2; ++k) {
    const auto leader = cluster.leader();
    ASSERT_TRUE(leader.has_value());
    const auto killed = clock::now();
    cluster.kill(*leader);
    ASSERT_TRUE(poll_until([&] { return cluster.leader().has_value(); }));
    leaderless = std::max(leaderless, clock::now() - killed);
    cluster.start(*leader);  // back as a follower (waits until it answers)
    std::this_thread::sleep_for(450ms);
  }
  std::this_thread::sleep_for(2500ms);  // past every lease the kills could have cost
  const auto gap = std::chrono::duration_cast<std::chrono::milliseconds>(leaderless);
  const bool answered = gap < 1s;
  std::printf("longest time without a known leader: %lld ms\n",
              static_cast<long long>(gap.count()));
  for (int i = 0; i < holders; ++i) {
    if (answered) {
      EXPECT_NE(holds[static_cast<std::size_t>(i)].state(), dlock::hold_state::lost)
          << "holder " << i << " was told lost though the cluster answered within " << gap.count()
          << " ms";
    } else if (holds[static_cast<std::size_t>(i)].state() == dlock::hold_state::lost) {
      std::printf("holder %d lost: the cluster was without a leader too long for it\n", i);
    }
    std::error_code ec;
    ms[static_cast<std::size_t>(i)]->unlock(ec);  // lock_lost, if the check above failed
  }
  for (auto& s : ss) s.close();
  EXPECT_TRUE(poll_until([&] { return cluster.keys(prefix + "/").empty(); }, 10s));
}

// A member that stops answering while its connection stays open (SIGSTOP, a paused VM, a disk
// stall), past the session's lease: the session's channel stays on it, every keep-alive ends
// at its deadline and is retried there, and the holder was told lost at its TTL while the other
// two kept a quorum (an outside tester, 3 of 3). gRPC keepalive pings on the channel now find
// it silent, and the channel moves to the next member.
TEST(etcd_cluster, a_holder_on_a_member_frozen_past_its_lease_keeps_its_hold) {
  etcd_cluster cluster(3);
  cluster.make_leader(1);  // the frozen member is a follower: the quorum stays
  const auto prefix = "fz" + random_suffix();
  auto s = dlock::session::open("etcd://" + cluster.hosts() + "/" + prefix + "?ttl=10s");
  dlock::mutex m(s, "job");  // on member 0, the first listed
  m.lock();
  auto h = m.current_hold();
  ASSERT_EQ(::kill(cluster.pid(0), SIGSTOP), 0);
  std::this_thread::sleep_for(13s);  // past the lease
  const auto state = h.state();
  ASSERT_EQ(::kill(cluster.pid(0), SIGCONT), 0);
  EXPECT_NE(state, dlock::hold_state::lost) << "told lost while two members answered";
  std::error_code ec;
  m.unlock(ec);
  EXPECT_FALSE(ec) << ec.message();
}

}  // namespace
}  // namespace dlock::test
