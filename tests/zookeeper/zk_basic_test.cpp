// The ZooKeeper layout itself: node names, containers, tokens, ACLs.
#include <gtest/gtest.h>

#include <limits>
#include <thread>
#include <vector>

#include "backends/zookeeper/zk_names.hpp"
#include "zookeeper/zk_env.hpp"

namespace dlock::test {
namespace {

using namespace std::chrono_literals;

TEST(zk_names, escaping_is_reversible_and_yields_one_component) {
  for (std::string name : {"plain", "a/b/c", "100%", "%2F", "it's \"quoted\"", ".", "..",
                           "caf\xc3\xa9", "\xf0\x9f\x94\x92 lock", "\xc2\x85next", "sp ace"}) {
    auto e = detail::zk::escape_lock_name(name);
    EXPECT_EQ(e.find('/'), std::string::npos) << name;
    EXPECT_NE(e, ".");
    EXPECT_NE(e, "..");
    auto back = detail::zk::unescape_lock_name(e);
    ASSERT_TRUE(back) << e;
    EXPECT_EQ(*back, name);
  }
  EXPECT_FALSE(detail::zk::unescape_lock_name("%2f"));  // not canonical
  EXPECT_FALSE(detail::zk::unescape_lock_name("%4"));
}

TEST(zk_names, child_names_carry_entry_id_and_kind) {
  using detail::entry_kind;
  using detail::zk::child_prefix;
  using detail::zk::parse_child;
  auto c = parse_child(child_prefix("0123abcd-1f", entry_kind::shared) + "0000000042");
  EXPECT_EQ(c.entry_id, "0123abcd-1f");
  EXPECT_EQ(c.kind, entry_kind::shared);
  EXPECT_EQ(c.seq, 42);
  EXPECT_FALSE(c.foreign);
  // A mutex's entry is named as Curator's InterProcessMutex names its nodes; a writer's (and
  // a permit's, a candidate's) as its read/write lock's writer.
  EXPECT_EQ(child_prefix("ab-1", entry_kind::exclusive, /*mutex=*/true), "_c_ab-1-lock-");
  EXPECT_EQ(child_prefix("ab-1", entry_kind::exclusive), "_c_ab-1-__WRIT__");
  auto m = parse_child("_c_ab-1-lock-0000000007");
  EXPECT_EQ(m.entry_id, "ab-1");
  EXPECT_EQ(m.kind, entry_kind::exclusive);
  EXPECT_EQ(m.seq, 7);
  EXPECT_EQ(detail::zk::node_prefix(m.entry_id), "_c_ab-1-");
}

TEST(zk_names, other_clients_children_are_contenders) {
  using detail::entry_kind;
  using detail::zk::parse_child;
  struct expect {
    std::string name;
    entry_kind kind;
    std::int64_t seq;
  };
  for (const auto& [name, kind, seq] : std::vector<expect>{
           {"0f1e2d3c4b5a69788796a5b4c3d2e1f0__lock__0000000003", entry_kind::exclusive, 3},
           {"0f1e2d3c4b5a69788796a5b4c3d2e1f0__rlock__0000000004", entry_kind::shared, 4},
           {"_c_5b1c3f6e-2d4a-4c8e-9f00-1a2b3c4d5e6f-latch-0000000005", entry_kind::exclusive, 5},
           {"lock-0000000001", entry_kind::exclusive, 1},
           {"x__rlock__", entry_kind::exclusive, std::numeric_limits<std::int64_t>::min()},
           {"config", entry_kind::exclusive, std::numeric_limits<std::int64_t>::min()},
           {"", entry_kind::exclusive, std::numeric_limits<std::int64_t>::min()}}) {
    auto c = parse_child(name);
    EXPECT_TRUE(c.foreign) << name;
    EXPECT_EQ(c.kind, kind) << name;
    EXPECT_EQ(c.seq, seq) << name;
    // Its id leads back to it, and reads as no dlock recipe's mark (a permit's, a candidate's).
    EXPECT_EQ(c.entry_id, name + "/");
    EXPECT_EQ(detail::zk::node_prefix(c.entry_id), name);
  }
}

TEST(zk_layout, lock_is_a_child_of_a_container_and_tokens_are_czxids) {
  auto s = dlock::session::open(zk_url());
  std::string name = "layout/" + random_suffix() + "/it's \xf0\x9f\x94\x92";
  raw_zk raw(shared_zk().hosts());
  std::uint64_t last = 0;
  for (int i = 0; i < 3; ++i) {
    dlock::mutex m(s, name);
    m.lock();
    auto kids = raw.children(lock_node(name));
    ASSERT_EQ(kids.size(), 1u);
    EXPECT_TRUE(kids[0].starts_with("_c_" + s.id())) << kids[0];
    EXPECT_NE(kids[0].find("-lock-"), std::string::npos);  // Curator's InterProcessMutex
    struct Stat st {};
    ASSERT_EQ(zoo_exists(raw.zh(), (lock_node(name) + "/" + kids[0]).c_str(), 0, &st), ZOK);
    EXPECT_EQ(m.token().value, static_cast<std::uint64_t>(st.czxid));
    EXPECT_GT(m.token().value, last);
    last = m.token().value;
    struct Stat parent {};
    ASSERT_EQ(zoo_exists(raw.zh(), lock_node(name).c_str(), 0, &parent), ZOK);
    m.unlock();
    EXPECT_TRUE(raw.children(lock_node(name)).empty());
  }
  auto names = dlock::list_locks(s, "layout/");
  EXPECT_TRUE(std::find(names.begin(), names.end(), name) == names.end());
  // The empty container is reaped by the server (checkIntervalMs=1000 in the fixture).
  bool gone = false;
  for (int i = 0; i < 100 && !gone; ++i) {
    gone = !raw.exists(lock_node(name));
    if (!gone) std::this_thread::sleep_for(100ms);
  }
  EXPECT_TRUE(gone);
}

// A rolling upgrade from a dlock that named a mutex's node "__WRIT__" and saw nothing else:
// ?mutex_names=writer keeps that name, and clients with and without it exclude each other.
TEST(zk_layout, mutex_names_writer_keeps_the_older_name_and_both_namings_exclude) {
  const auto name = "mutex-names/" + random_suffix();
  auto older = dlock::session::open(zk_url() + "&mutex_names=writer");
  auto newer = dlock::session::open(zk_url());
  raw_zk raw(shared_zk().hosts());
  dlock::mutex a(older, name), b(newer, name);
  ASSERT_TRUE(a.try_lock());
  auto kids = raw.children(lock_node(name));
  ASSERT_EQ(kids.size(), 1u);
  EXPECT_TRUE(kids[0].starts_with("_c_" + older.id()) &&
              kids[0].find("-__WRIT__") != std::string::npos)
      << kids[0];
  EXPECT_FALSE(b.try_lock());
  a.unlock();
  ASSERT_TRUE(b.try_lock());
  EXPECT_FALSE(a.try_lock());
  b.unlock();
  std::error_code ec;
  EXPECT_FALSE(dlock::session::open(zk_url() + "&mutex_names=kazoo", {}, ec));
  EXPECT_EQ(ec, dlock::errc::invalid_argument);
}

TEST(zk_layout, list_locks_and_inspect_show_the_queue) {
  auto a = dlock::session::open(zk_url());
  auto b = dlock::session::open(zk_url());
  std::string name = "inspect/" + random_suffix() + "/x";
  dlock::mutex ma(a, name);
  ma.lock();
  std::jthread waiter([&] {
    dlock::mutex mb(b, name);
    EXPECT_TRUE(mb.try_lock_for(20s));
    mb.unlock();
  });
  std::vector<dlock::queue_entry> q;
  for (int i = 0; i < 200 && q.size() < 2; ++i) {
    q = dlock::inspect(a, name);
    if (q.size() < 2) std::this_thread::sleep_for(20ms);
  }
  ASSERT_EQ(q.size(), 2u);
  EXPECT_TRUE(q[0].holds);
  EXPECT_FALSE(q[1].holds);
  EXPECT_EQ(q[0].token, ma.token().value);
  EXPECT_LT(q[0].token, q[1].token);
  EXPECT_NE(q[0].owner.find("pid="), std::string::npos);
  auto names = dlock::list_locks(a, "inspect/");
  EXPECT_NE(std::find(names.begin(), names.end(), name), names.end());
  ma.unlock();
}

TEST(zk_layout, digest_credentials_protect_entries) {
  auto url = "zk://alice:secret@" + shared_zk().hosts() + "/secure-" + random_suffix() +
             "?session_timeout=4s";
  auto s = dlock::session::open(url);
  EXPECT_EQ(s.url().find("secret"), std::string::npos);
  std::string name = "acl";
  dlock::mutex m(s, name);
  m.lock();
  raw_zk raw(shared_zk().hosts());
  auto chroot = url.substr(url.find("/secure-"), url.find('?') - url.find("/secure-"));
  auto lock = chroot + "/dlock/acl";
  auto kids = raw.children(lock);
  ASSERT_EQ(kids.size(), 1u);
  // Anyone may read; an anonymous client may not delete.
  EXPECT_EQ(zoo_delete(raw.zh(), (lock + "/" + kids[0]).c_str(), -1), ZNOAUTH);
  struct ACL_vector acl {};
  struct Stat st {};
  ASSERT_EQ(zoo_get_acl(raw.zh(), (lock + "/" + kids[0]).c_str(), &acl, &st), ZOK);
  EXPECT_EQ(acl.count, 2);
  deallocate_ACL_vector(&acl);
  m.unlock();
  EXPECT_TRUE(raw.children(lock).empty());
}

TEST(zk_session, bad_host_is_unavailable_and_names_the_host) {
  dlock::session_options o;
  o.request_timeout = 500ms;
  o.retry.max_attempts = 0;
  std::error_code ec;
  auto port = free_port();
  auto s = dlock::session::open(
      "zk://127.0.0.1:" + std::to_string(port) + "/?connect_timeout=300ms", o, ec);
  EXPECT_FALSE(s);
  EXPECT_EQ(ec, dlock::errc::backend_unavailable);
}

// The persistent parents (the chroot, `dlock`) let anyone create under them: a tester's first
// `zk://alice:…@` client made them with its own ACL, and every other identity, or none, was
// refused (77) for every lock name in the chroot, for good.
TEST(zk_layout, another_identity_may_use_other_lock_names_in_a_chroot_one_identity_made) {
  const auto where = shared_zk().hosts() + "/shared-" + random_suffix() + "?session_timeout=4s";
  auto alice = dlock::session::open("zk://alice:secret@" + where);
  dlock::mutex a(alice, "alices");
  a.lock();
  for (std::string who : {"bob:other@", ""}) {
    auto s = dlock::session::open("zk://" + who + where);
    dlock::mutex m(s, "theirs" + std::to_string(who.size()));  // a name of their own
    EXPECT_TRUE(m.try_lock_for(2s)) << (who.empty() ? "anonymous" : who);
    m.unlock();
  }
  a.unlock();
}

// The ensemble grants at most maxSessionTimeout (60 s here): a keepalive checked only against
// the TTL asked would renew after the lease it got had ended. A tester's ttl=60s&keepalive=45s
// on a 40 s ensemble lost every hold at 40 s, with no fault.
TEST(zk_session, a_keepalive_not_below_the_granted_ttl_is_refused_at_open) {
  std::error_code ec;
  const auto base = "zk://" + shared_zk().hosts() + "/?ttl=90s";
  auto s = dlock::session::open(base + "&keepalive=70s", {}, ec);
  EXPECT_FALSE(s);
  EXPECT_EQ(ec, dlock::errc::invalid_argument);
  const std::string why = dlock::last_error_message();
  EXPECT_NE(why.find("keepalive 1m10s is not below the TTL the server granted, 1m"),
            std::string::npos)
      << why;
  // Below what is granted: fine.
  auto fine = dlock::session::open(base + "&keepalive=50s");
  EXPECT_EQ(fine.ttl(), 60s);
}

// session_timeout and the TTL both set the session timeout: a tester's `dlock run --ttl 30s`
// with session_timeout=6s in the URL ran on a 6 s lease, the --ttl silently dropped.
TEST(zk_session, a_ttl_and_a_different_session_timeout_are_refused) {
  const auto base = "zk://" + shared_zk().hosts() + "/?session_timeout=6s";
  for (auto [url, options] : {std::pair{base, dlock::session_options{.ttl = 30s}},
                              std::pair{base + "&ttl=30s", dlock::session_options{}}}) {
    std::error_code ec;
    auto s = dlock::session::open(url, options, ec);
    EXPECT_FALSE(s) << url;
    EXPECT_EQ(ec, dlock::errc::invalid_argument) << url;
    const std::string why = dlock::last_error_message();
    EXPECT_NE(why.find("both set the session timeout"), std::string::npos) << why;
    EXPECT_NE(why.find("30"), std::string::npos) << why;
  }
  // The same value twice, or only one of them: fine.
  EXPECT_EQ(dlock::session::open(base, {.ttl = 6s}).ttl(), 6s);
  EXPECT_EQ(dlock::session::open(base).ttl(), 6s);
}

// A zero or near-zero timeout is bad input, said at once (a tester's session_timeout=0s and
// connect_timeout=0s failed seconds later as an unreachable server, exit 69).
TEST(zk_session, a_zero_session_or_connect_timeout_is_refused_at_once) {
  const auto base = "zk://" + shared_zk().hosts() + "/?";
  for (std::string q : {"session_timeout=0s", "session_timeout=1ms", "connect_timeout=0s"}) {
    std::error_code ec;
    auto s = dlock::session::open(base + q, {}, ec);
    EXPECT_FALSE(s) << q;
    EXPECT_EQ(ec, dlock::errc::invalid_argument) << q;
    EXPECT_NE(dlock::last_error_message().find("is too short"), std::string::npos)
        << dlock::last_error_message();
  }
  // The shortest allowed opens: the ensemble grants at least two ticks.
  EXPECT_GE(dlock::session::open(base + "session_timeout=10ms").ttl(), 10ms);
}

// The C client computes with the timeout in an int: a tester's --ttl 299h got no session
// ("no session within 5000 ms" from a healthy server), 597h wrapped to the ensemble's minimum.
// A long lease is asked within the client's range, and the ensemble's maximum granted.
TEST(zk_session, a_lease_longer_than_the_clients_int_range_gets_the_ensembles_maximum) {
  const auto base = "zk://" + shared_zk().hosts() + "/?keepalive=5s&";
  for (std::string ttl : {"299h", "597h", "1000h"}) {
    EXPECT_EQ(dlock::session::open(base + "ttl=" + ttl).ttl(), 60s) << ttl;
  }
}

}  // namespace
}  // namespace dlock::test
