// dlock's election and `etcdctl elect` (Go's concurrency.Election) on one etcd agree on the
// leader and its value: real etcdctl processes against a real member.
#include <gtest/gtest.h>
#include <signal.h>

#include <dlock/dlock.hpp>
#include <thread>

#include "etcd/etcd_env.hpp"
#include "support/net.hpp"

namespace dlock::test {
namespace {

using namespace std::chrono_literals;

std::string url() { return "etcd://" + shared_etcd().address() + "?ttl=3s"; }

child_process::options merged() {
  child_process::options o;
  o.merge_stderr = true;
  return o;
}

// Waits until dlock's view of the election shows a leader with `value`.
std::optional<leader_info> leader_with(const election& e, const std::string& value) {
  for (int i = 0; i < 200; ++i) {
    auto l = e.leader();
    if (l && l->value == value) return l;
    std::this_thread::sleep_for(25ms);
  }
  return e.leader();
}

TEST(etcd_elect, a_dlock_leader_is_etcdctls_leader_and_etcdctl_follows_it) {
  const auto name = "elect-" + random_suffix();
  auto s = session::open(url());
  election e(s, name);
  auto lead = e.campaign("dlock-1");

  // etcdctl elect -l prints the leader's key and then its value, and again on every change.
  child_process listen(shared_etcd().etcdctl_argv({"elect", "-l", name}), merged());
  auto key = listen.wait_for_line(name + "/", 10s);
  ASSERT_TRUE(key) << "etcdctl elect -l saw no leader";
  EXPECT_EQ(listen.read_line(5s), "dlock-1");
  lead.proclaim("dlock-2");
  ASSERT_TRUE(listen.wait_for_line(name + "/", 10s));
  EXPECT_EQ(listen.read_line(5s), "dlock-2");

  // An etcdctl candidate waits behind dlock's leader...
  child_process ctl(shared_etcd().etcdctl_argv({"elect", name, "ctl-1"}), merged());
  EXPECT_FALSE(ctl.wait_for_line(name + "/", 1500ms)) << "etcdctl elected beside dlock's leader";
  // ...and leads once dlock resigns; dlock's observers see its value and a later term.
  const auto term = lead.token();
  lead.resign();
  ASSERT_TRUE(ctl.wait_for_line(name + "/", 10s)) << "etcdctl not elected after dlock resigned";
  EXPECT_EQ(ctl.read_line(5s), "ctl-1");
  auto l = leader_with(e, "ctl-1");
  ASSERT_TRUE(l);
  EXPECT_EQ(l->value, "ctl-1");
  EXPECT_GT(l->token, term);
  // A dlock candidate now waits behind etcdctl's leader.
  auto s2 = session::open(url());
  election e2(s2, name);
  EXPECT_FALSE(e2.try_campaign_for("dlock-3", 500ms));
  ctl.signal(SIGINT);  // etcdctl resigns on interrupt
  auto next = e2.try_campaign_for("dlock-3", 10s);
  ASSERT_TRUE(next);
  EXPECT_GT(next.token(), l->token);
  (void)ctl.wait(5s);
}

}  // namespace
}  // namespace dlock::test
