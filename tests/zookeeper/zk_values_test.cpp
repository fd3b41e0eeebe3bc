// Entry values on ZooKeeper (elections): where value and version live in the entry node, that
// nodes written before values (and Curator's) read as they always did, and what a lock, a
// campaign and an observer cost in requests.
#include <gtest/gtest.h>

#include <thread>

#include "backends/zookeeper/zk_names.hpp"
#include "backends/zookeeper/zk_queue.hpp"
#include "backends/zookeeper/zk_value.hpp"
#include "core/session_core.hpp"
#include "support/poll.hpp"
#include "zookeeper/zk_env.hpp"

namespace dlock::test {
namespace {

using namespace std::chrono_literals;
using clock = std::chrono::steady_clock;

detail::zk::request_counts requests(const dlock::session& s) {
  return *detail::zookeeper_requests(s.core()->backend());
}

// Data and child watches on the server (wchs counts only data watches).
long server_watches() {
  auto out = zk_four_letter(shared_zk().port(), "mntr");
  auto pos = out.find("zk_watch_count");
  return pos == std::string::npos ? -1 : std::stol(out.substr(pos + 14));
}

// A node's data and stat, read by a plain client.
std::pair<std::string, std::int32_t> raw_data(raw_zk& raw, const std::string& path) {
  std::string buf(64 * 1024, '\0');
  int len = static_cast<int>(buf.size());
  struct Stat st {};
  EXPECT_EQ(zoo_get(raw.zh(), path.c_str(), 0, buf.data(), &len, &st), ZOK) << path;
  buf.resize(static_cast<std::size_t>(std::max(len, 0)));
  return {buf, st.version};
}

// The lock node of `name` as a persistent node: the server never reaps it, so a test's first
// acquire is the plain cycle (no parent creation) whenever it runs.
void make_lock_node(raw_zk& raw, const std::string& name, int mode = ZOO_PERSISTENT) {
  int rc =
      zoo_create(raw.zh(), "/dlock", nullptr, -1, &ZOO_OPEN_ACL_UNSAFE, ZOO_PERSISTENT, nullptr, 0);
  ASSERT_TRUE(rc == ZOK || rc == ZNODEEXISTS) << zerror(rc);
  rc = zoo_create(raw.zh(), lock_node(name).c_str(), nullptr, -1, &ZOO_OPEN_ACL_UNSAFE, mode,
                  nullptr, 0);
  ASSERT_EQ(rc, ZOK) << zerror(rc);
}

// An entry node as dlock wrote it before values: the owner as data, never set.
std::string create_entry(raw_zk& raw, const std::string& name, const std::string& id,
                         const std::string& data) {
  auto path = lock_node(name) + "/" + detail::zk::child_prefix(id, detail::entry_kind::exclusive);
  char created[512];
  int rc = zoo_create(raw.zh(), path.c_str(), data.data(), static_cast<int>(data.size()),
                      &ZOO_OPEN_ACL_UNSAFE, ZOO_EPHEMERAL_SEQUENTIAL, created, sizeof created);
  EXPECT_EQ(rc, ZOK) << zerror(rc);
  return created;
}

TEST(zk_values, the_data_is_owner_nul_value_and_a_node_never_set_is_all_owner) {
  using detail::zk::decode_data, detail::zk::encode_value;
  const std::string value("v\0w", 3);
  auto data = encode_value("host pid=1", value);
  EXPECT_EQ(data, std::string("host pid=1\0v\0w", 14));
  auto back = decode_data(data, 1);
  EXPECT_EQ(back.owner, "host pid=1");
  EXPECT_EQ(back.value, value);
  // An owner holding a NUL is cut there, so the first NUL always ends the owner.
  back = decode_data(encode_value(std::string("a\0b", 3), "v"), 2);
  EXPECT_EQ(back.owner, "a");
  EXPECT_EQ(back.value, "v");
  // Never set: all owner, whatever it holds.
  back = decode_data(std::string("10.0.0.9\0x", 10), 0);
  EXPECT_EQ(back.owner, std::string("10.0.0.9\0x", 10));
  EXPECT_EQ(back.value, "");
  // Set by hand, without the NUL: all value.
  back = decode_data("by hand", 3);
  EXPECT_EQ(back.owner, "");
  EXPECT_EQ(back.value, "by hand");
}

TEST(zk_values, only_a_candidate_at_the_head_has_its_version_compared) {
  using detail::entry_kind;
  using detail::zk::child_prefix;
  auto ids = [](const std::vector<detail::entry>& q) {
    std::string out;
    for (const auto& e : q) out += e.id + "@" + std::to_string(e.version) + " ";
    return out;
  };
  std::vector<std::string> election{child_prefix("b~e", entry_kind::exclusive) + "0000000002",
                                    child_prefix("a~e", entry_kind::exclusive) + "0000000001",
                                    "lock-0000000003"};
  EXPECT_EQ(ids(detail::zk::compared_entries(election, 7)), "a~e@7 b~e@0 lock-0000000003/@0 ");
  // Another client's node is a contender too (zk_names.hpp): at the head, no candidate leads.
  election.back() = "lock-0000000000";
  EXPECT_EQ(ids(detail::zk::compared_entries(election, 7)), "lock-0000000000/@0 a~e@0 b~e@0 ");
  std::vector<std::string> lock{child_prefix("a", entry_kind::exclusive) + "0000000001",
                                child_prefix("b~e", entry_kind::exclusive) + "0000000002"};
  EXPECT_EQ(ids(detail::zk::compared_entries(lock, 7)), "a@0 b~e@0 ");
}

TEST(zk_values, nodes_written_before_values_read_at_version_0_and_the_lock_works) {
  const auto name = "old-nodes/" + random_suffix();
  raw_zk raw(shared_zk().hosts());
  make_lock_node(raw, name, ZOO_CONTAINER);
  // One as dlock wrote it before values, one as Curator's InterProcessReadWriteLock does (a
  // UUID in the protected prefix, the client's address as data).
  const std::string old_owner = "oldhost pid=42 before values";
  auto old_dlock = create_entry(raw, name, "00112233aabbccdd-1", old_owner);
  auto curator = create_entry(raw, name, "6f1c9a52-0d3e-4b8e-9a55-2c7d1e0f4b21", "10.0.0.9");

  auto s = dlock::session::open(zk_url());
  auto q = s.core()->backend().list(name);
  ASSERT_TRUE(q) << q.error().message;
  ASSERT_EQ(q->entries.size(), 2u);
  EXPECT_EQ(q->entries[0].owner, old_owner);
  EXPECT_EQ(q->entries[1].owner, "10.0.0.9");
  for (const auto& e : q->entries) {
    EXPECT_EQ(e.version, 0u) << e.id;
    EXPECT_EQ(e.value, "") << e.id;
    EXPECT_GT(e.token, 0u) << e.id;
  }
  auto shown = dlock::inspect(s, name);
  ASSERT_EQ(shown.size(), 2u);
  EXPECT_TRUE(shown[0].holds);
  EXPECT_EQ(shown[0].owner, old_owner);

  // They still hold and queue as locks: a dlock waiter is granted only once both are gone.
  dlock::mutex m(s, name);
  EXPECT_FALSE(m.try_lock());
  std::atomic<bool> granted{false};
  std::jthread waiter([&] { granted = m.try_lock_for(20s); });
  ASSERT_TRUE(poll_until([&] { return raw.children(lock_node(name)).size() == 3; }));
  ASSERT_EQ(zoo_delete(raw.zh(), old_dlock.c_str(), -1), ZOK);
  std::this_thread::sleep_for(200ms);
  EXPECT_FALSE(granted.load()) << "granted past the Curator node";
  ASSERT_EQ(zoo_delete(raw.zh(), curator.c_str(), -1), ZOK);
  waiter.join();
  ASSERT_TRUE(granted.load());
  // And an election cannot run on it: it is a lock.
  EXPECT_THROW((void)dlock::election(dlock::session::open(zk_url()), name).leader(),
               dlock::system_error);
  m.unlock();
}

TEST(zk_values, the_value_follows_the_owner_and_the_version_is_the_nodes) {
  const auto name = "value-layout/" + random_suffix();
  raw_zk raw(shared_zk().hosts());
  auto s = dlock::session::open(zk_url());
  dlock::election e(s, name);
  auto lead = e.try_campaign_for("first", 5s);
  ASSERT_TRUE(lead);
  lead.proclaim(std::string("second\0bytes", 12));
  auto kids = raw.children(lock_node(name));
  ASSERT_EQ(kids.size(), 1u);
  EXPECT_TRUE(kids[0].find("~e-__WRIT__") != std::string::npos) << kids[0];
  const auto node = lock_node(name) + "/" + kids[0];
  auto [data, version] = raw_data(raw, node);
  const auto owner = dlock::inspect(s, name).at(0).owner;
  ASSERT_FALSE(owner.empty());
  // An older reader takes the whole data for the owner: it starts with it.
  EXPECT_EQ(data, owner + std::string(1, '\0') + std::string("second\0bytes", 12));
  EXPECT_EQ(version, 2);
  auto l = e.leader();
  ASSERT_TRUE(l);
  EXPECT_EQ(l->value, std::string("second\0bytes", 12));
  EXPECT_EQ(l->version, 2u);
  EXPECT_EQ(l->owner, owner);

  // Set by hand (zkCli): the data is all value; the leader's next proclaim goes over it.
  ASSERT_EQ(zoo_set(raw.zh(), node.c_str(), "by hand", 7, -1), ZOK);
  l = e.leader();
  ASSERT_TRUE(l);
  EXPECT_EQ(l->value, "by hand");
  EXPECT_EQ(l->version, 3u);
  lead.proclaim("fourth");
  l = e.leader();
  ASSERT_TRUE(l);
  EXPECT_EQ(l->value, "fourth");
  EXPECT_EQ(l->version, 4u);
  EXPECT_EQ(raw_data(raw, node).first, owner + std::string(1, '\0') + "fourth");
}

TEST(zk_requests, a_plain_mutex_costs_create_get_children_and_delete_only) {
  const auto name = "cost/" + random_suffix();
  raw_zk raw(shared_zk().hosts());
  make_lock_node(raw, name);
  auto s = dlock::session::open(zk_url());
  dlock::mutex m(s, name);
  for (int round = 0; round < 3; ++round) {
    auto before = requests(s);
    m.lock();
    auto held = requests(s);
    m.unlock();
    auto after = requests(s);
    // The acquire: create2 (its czxid is the token) and getChildren, no read of any node.
    EXPECT_EQ(held.create - before.create, 1u);
    EXPECT_EQ(held.get_children - before.get_children, 1u);
    EXPECT_EQ(held.get_data - before.get_data, 0u);
    EXPECT_EQ(held.set_data - before.set_data, 0u);
    EXPECT_EQ(held.remove - before.remove, 0u);
    // The release: one delete.
    EXPECT_EQ(after.remove - held.remove, 1u);
    EXPECT_EQ(after.create + after.get_children + after.get_data + after.set_data,
              held.create + held.get_children + held.get_data + held.set_data);
  }
  EXPECT_TRUE(poll_until([&] { return raw.children(lock_node(name)).empty(); }));
  EXPECT_EQ(zoo_delete(raw.zh(), lock_node(name).c_str(), -1), ZOK);
}

TEST(zk_requests, an_election_reads_only_its_leaders_value_and_observers_do_not_poll) {
  const auto name = "election-cost/" + random_suffix();
  raw_zk raw(shared_zk().hosts());
  make_lock_node(raw, name);
  auto a = dlock::session::open(zk_url()), b = dlock::session::open(zk_url()),
       c = dlock::session::open(zk_url()), o = dlock::session::open(zk_url());
  auto before = requests(a);
  auto la = dlock::election(a, name).try_campaign_for("a", 5s);
  ASSERT_TRUE(la);
  auto won = requests(a);
  // A campaign: create2, getChildren, then setData of the value.
  EXPECT_EQ(won.create - before.create, 1u);
  EXPECT_EQ(won.get_children - before.get_children, 1u);
  EXPECT_EQ(won.set_data - before.set_data, 1u);
  EXPECT_EQ(won.get_data - before.get_data, 0u);

  std::optional<dlock::leadership> lb, lc;
  std::jthread tb([&] { lb = dlock::election(b, name).try_campaign_for("b", 30s); });
  ASSERT_TRUE(poll_until([&] { return raw.children(lock_node(name)).size() == 2; }));
  std::jthread tc([&] { lc = dlock::election(c, name).try_campaign_for("c", 30s); });
  ASSERT_TRUE(poll_until([&] { return raw.children(lock_node(name)).size() == 3; }));

  dlock::election observed(o, name);
  ASSERT_EQ(observed.leader().value().value, "a");  // reads the metadata of all three once
  auto listed = requests(o);
  auto l = observed.leader();
  auto again = requests(o);
  ASSERT_TRUE(l);
  EXPECT_EQ(l->value, "a");
  EXPECT_EQ(again.get_children - listed.get_children, 1u);
  EXPECT_EQ(again.get_data - listed.get_data, 1u) << "a listing read more than the leader";

  // An observer waits on watches: idle, it sends nothing; a proclaim reaches it.
  std::mutex mu;
  std::vector<std::string> seen;
  std::jthread observer([&](std::stop_token stop) {
    observed.observe(
        [&](const std::optional<leader_info>& now) {
          std::lock_guard lk(mu);
          seen.push_back(now ? now->value + "@" + std::to_string(now->version) : "-");
        },
        stop);
  });
  auto last = [&] {
    std::lock_guard lk(mu);
    return seen.empty() ? std::string() : seen.back();
  };
  ASSERT_TRUE(poll_until([&] { return last() == "a@1"; }));
  std::this_thread::sleep_for(100ms);  // into its wait
  auto idle = requests(o);
  std::this_thread::sleep_for(1500ms);
  auto later = requests(o);
  EXPECT_EQ(later.get_children, idle.get_children) << "an idle observer polled";
  EXPECT_EQ(later.get_data, idle.get_data) << "an idle observer polled";
  la.proclaim("a2");
  EXPECT_TRUE(poll_until([&] { return last() == "a2@2"; }, 5s));
  la.resign();
  EXPECT_TRUE(poll_until([&] { return last() == "b@1"; }, 10s));
  tb.join();
  ASSERT_TRUE(lb && *lb);
  lb->resign();
  tc.join();
  ASSERT_TRUE(lc && *lc);
  EXPECT_TRUE(poll_until([&] { return last() == "c@1"; }, 10s));
  lc->resign();
  EXPECT_TRUE(poll_until([&] { return last() == "-"; }, 10s));
  // Stopped in its wait, the observer leaves its child watch on the lock node until the
  // session closes (which removes it first: see zk_failure's closing test).
  std::this_thread::sleep_for(100ms);  // into its wait
  observer.request_stop();
  observer.join();
  EXPECT_GE(server_watches(), 1);
  for (auto* s : {&a, &b, &c, &o}) s->close();
  EXPECT_EQ(server_watches(), 0) << "a closed session left a watch behind";
  EXPECT_TRUE(poll_until([&] { return raw.children(lock_node(name)).empty(); }));
  EXPECT_EQ(zoo_delete(raw.zh(), lock_node(name).c_str(), -1), ZOK);
}

}  // namespace
}  // namespace dlock::test
