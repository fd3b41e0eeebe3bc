// A three-server ensemble on loopback: losing the leader must not lose a hold, and the
// waiters must still be served in their order once it is released.
#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <thread>

#include "support/poll.hpp"
#include "zookeeper/zk_env.hpp"

namespace dlock::test {
namespace {

using namespace std::chrono_literals;
using clock = std::chrono::steady_clock;

TEST(zk_ensemble, stopping_the_leader_keeps_the_hold_and_the_waiters_order) {
  zk_ensemble ensemble(3);
  const auto url = zk_url(10s, ensemble.hosts());
  const std::string name = "failover";
  raw_zk raw(ensemble.hosts());
  auto entries = [&] { return raw.children(lock_node(name)).size(); };
  auto wait_entries = [&](std::size_t n) {
    return poll_until([&] { return entries() == n; }, 30s);
  };

  auto holder_s = dlock::session::open(url);
  dlock::mutex holder(holder_s, name);
  holder.lock();
  auto held = holder.current_hold();
  const auto token = held.token();

  constexpr int waiters = 3;
  std::vector<dlock::session> ss;
  std::mutex order_mu;
  std::vector<int> order;
  std::vector<std::jthread> threads;
  for (int i = 0; i < waiters; ++i) {
    ss.push_back(dlock::session::open(url));
    threads.emplace_back([&, i] {
      dlock::mutex m(ss[static_cast<std::size_t>(i)], name);
      if (!m.try_lock_for(120s)) return;
      {
        std::lock_guard lk(order_mu);
        order.push_back(i);
      }
      m.unlock();
    });
    ASSERT_TRUE(wait_entries(static_cast<std::size_t>(i) + 2));  // arrival order is fixed
  }

  auto leader = ensemble.leader();
  ASSERT_TRUE(leader.has_value());
  ensemble.stop(*leader);
  auto next_leader = ensemble.leader(60s);
  ASSERT_TRUE(next_leader.has_value()) << "no new leader after stopping the old one";
  EXPECT_NE(*next_leader, *leader);

  // Clients reconnect within the session timeout: the hold comes back from suspect to held.
  poll_until([&] { return held.state() == dlock::hold_state::held; }, 20s, 20ms);
  EXPECT_EQ(held.state(), dlock::hold_state::held);
  EXPECT_TRUE(held.is_held());
  EXPECT_EQ(holder.token(), token);
  {
    std::lock_guard lk(order_mu);
    EXPECT_TRUE(order.empty()) << "a waiter was granted while the hold was alive";
  }
  std::error_code ec;
  holder.unlock(ec);
  EXPECT_FALSE(ec) << ec.message();
  for (auto& t : threads) t.join();
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2}));
}

}  // namespace
}  // namespace dlock::test
