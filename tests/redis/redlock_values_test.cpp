// Elections on Redlock: a value counts once a majority of masters has it, and a reader writes
// back a value it saw on a minority before reporting it (docs/redis.md, "Elections on
// Redlock"). Three real redis-servers; some clients reach some masters through tcp_proxies
// that the test resets.
#include <gtest/gtest.h>

#include <dlock/dlock.hpp>
#include <mutex>
#include <thread>

#include "support/redis_server.hpp"
#include "support/tcp_proxy.hpp"

namespace dlock::test {
namespace {

using namespace std::chrono_literals;

struct election_masters {
  std::vector<std::unique_ptr<redis_server>> servers;
  election_masters() {
    for (int i = 0; i < 3; ++i) servers.push_back(std::make_unique<redis_server>());
  }
  // redlock:// over the three masters; ports[i] != 0 replaces master i's port (a proxy).
  std::string url(std::vector<std::uint16_t> ports = {0, 0, 0}) const {
    std::string hosts;
    for (std::size_t i = 0; i < servers.size(); ++i) {
      auto port = ports[i] ? ports[i] : servers[i]->port();
      hosts += (hosts.empty() ? "" : ",") + ("127.0.0.1:" + std::to_string(port));
    }
    return "redlock://" + hosts + "?ttl=10s&prefix=rv:";
  }
  // What master i stores as the candidate's value: "version|value", or "" if nothing.
  std::string stored(std::size_t i, const std::string& id) const {
    auto r = servers[i]->command({"HGET", "rv:v:vote", id});
    return r.empty() ? "" : r[0];
  }
};

std::string leader_as(const std::optional<leader_info>& l) {
  return l ? l->value + "@" + std::to_string(l->version) : "-";
}

TEST(redlock_values, a_proclaim_that_reached_one_master_fails_and_readers_never_disagree_on_it) {
  election_masters m;
  tcp_proxy lead_to_1(m.servers[1]->port()), lead_to_2(m.servers[2]->port());
  tcp_proxy a_to_2(m.servers[2]->port()), b_to_0(m.servers[0]->port());
  const session_options quick{.request_timeout = 500ms};
  auto leader_session = session::open(m.url({0, lead_to_1.port(), lead_to_2.port()}), quick);
  dlock::election e(leader_session, "vote");
  auto lead = e.try_campaign_for("a", 5s);
  ASSERT_TRUE(lead);
  const auto ids = m.servers[0]->entry_ids("rv:", "vote");
  ASSERT_EQ(ids.size(), 1u);
  for (std::size_t i = 0; i < 3; ++i) EXPECT_EQ(m.stored(i, ids[0]), "1|a") << "master " << i;

  // The leader reaches master 0 only: its proclaim lands there and is refused as a whole.
  lead_to_1.reset();
  lead_to_2.reset();
  EXPECT_THROW(lead.proclaim("b"), dlock::system_error) << "a minority's write counted";
  lead_to_1.pass();
  lead_to_2.pass();
  const auto minority = m.stored(0, ids[0]);
  ASSERT_TRUE(minority.ends_with("|b")) << minority;
  EXPECT_EQ(m.stored(1, ids[0]), "1|a");
  EXPECT_EQ(m.stored(2, ids[0]), "1|a");

  // Reader A reaches masters 0 and 1, reader B masters 1 and 2. A sees "b" on master 0 and
  // may report it only once a majority has it (its write-back to master 1); B, which cannot
  // reach master 0, must then find it on master 1 rather than report "a" after A saw "b".
  auto a = session::open(m.url({0, 0, a_to_2.port()}), quick);
  auto b = session::open(m.url({b_to_0.port(), 0, 0}), quick);
  a_to_2.reset();
  b_to_0.reset();
  const auto seen_by_a = leader_as(dlock::election(a, "vote").leader());
  EXPECT_EQ(seen_by_a, "b@" + minority.substr(0, minority.find('|')));
  EXPECT_EQ(m.stored(1, ids[0]), minority) << "A reported a value only one master had";
  EXPECT_EQ(leader_as(dlock::election(b, "vote").leader()), seen_by_a) << "the readers disagree";
  EXPECT_EQ(m.stored(2, ids[0]), minority) << "B did not write back what it reported";

  // The leader's next proclaim takes a version above every one it tried before.
  a_to_2.pass();
  b_to_0.pass();
  lead.proclaim("c");
  const auto now = leader_as(dlock::election(a, "vote").leader());
  EXPECT_TRUE(now.starts_with("c@")) << now;
  EXPECT_GT(std::stoull(now.substr(2)), std::stoull(minority.substr(0, minority.find('|'))));
  for (std::size_t i = 0; i < 3; ++i) EXPECT_TRUE(m.stored(i, ids[0]).ends_with("|c"));
}

TEST(redlock_values, an_observer_follows_the_leader_with_one_master_down) {
  election_masters m;
  tcp_proxy watch_to_0(m.servers[0]->port());
  auto watcher = session::open(m.url({watch_to_0.port(), 0, 0}), {.request_timeout = 500ms});
  auto candidate = session::open(m.url());
  watch_to_0.reset();  // the observer's registrations and pushes come from masters 1 and 2
  std::mutex mu;
  std::vector<std::string> seen;
  std::jthread observer([&](std::stop_token stop) {
    try {
      dlock::election(watcher, "vote")
          .observe(
              [&](const std::optional<leader_info>& l) {
                std::lock_guard lk(mu);
                seen.push_back(leader_as(l));
              },
              stop);
    } catch (const std::exception& e) {
      std::lock_guard lk(mu);
      seen.push_back(std::string("error ") + e.what());
    }
  });
  auto last_is = [&](const std::string& what) {
    for (int i = 0; i < 500; ++i) {
      {
        std::lock_guard lk(mu);
        if (!seen.empty() && seen.back() == what) return true;
      }
      std::this_thread::sleep_for(10ms);
    }
    return false;
  };
  ASSERT_TRUE(last_is("-"));
  dlock::election e(candidate, "vote");
  auto lead = e.try_campaign_for("x", 5s);
  ASSERT_TRUE(lead);
  EXPECT_TRUE(last_is("x@1"));
  lead.proclaim("y");
  EXPECT_TRUE(last_is("y@2"));
  lead.resign();
  EXPECT_TRUE(last_is("-"));
  observer.request_stop();
  observer.join();
  const std::vector<std::string> expected{"-", "x@1", "y@2", "-"};
  std::lock_guard lk(mu);
  EXPECT_EQ(seen, expected);
}

}  // namespace
}  // namespace dlock::test
