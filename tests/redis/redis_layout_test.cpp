// The lone-holder key on redis:// (redis_scripts.hpp): a free lock is taken in one gate key,
// a second contender moves the holder into the queue first, listing changes nothing, and the
// last release leaves only the fencing counter.
#include <gtest/gtest.h>

#include <algorithm>
#include <dlock/dlock.hpp>
#include <thread>

#include "support/redis_server.hpp"

namespace dlock::test {
namespace {

using namespace std::chrono_literals;

redis_server& server() {
  static redis_server s;
  return s;
}

std::vector<std::string> sorted(std::vector<std::string> v) {
  std::sort(v.begin(), v.end());
  return v;
}

std::vector<std::string> sorted_keys(const std::string& pattern) {
  return sorted(server().keys(pattern));
}

TEST(redis_layout, a_lone_holder_is_one_key_until_a_second_contender_queues_it) {
  const std::string p = "l" + random_suffix() + ":";
  const auto url = "redis://" + server().address() + "?ttl=10s&prefix=" + p;
  auto a = dlock::session::open(url);
  auto b = dlock::session::open(url);
  dlock::mutex ma(a, "job"), mb(b, "job");

  ma.lock();
  auto lone = server().lone_holder(p, "job");
  ASSERT_TRUE(lone.has_value()) << "an uncontended hold must live in h:job alone";
  EXPECT_TRUE(lone->starts_with(a.id() + "-")) << *lone;
  EXPECT_EQ(sorted_keys(p + "*"), sorted({p + "f:job", p + "fence-floor", p + "h:job",
                                          p + "s:" + a.id(), p + "s:" + b.id(), p + "scheme"}));

  // Listing reads the lone holder and moves nothing.
  auto seen = dlock::inspect(b, "job");
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_TRUE(seen[0].holds);
  EXPECT_EQ(seen[0].token, ma.token().value);
  EXPECT_TRUE(server().lone_holder(p, "job").has_value());

  // A second contender first moves the holder into the queue; h:job becomes the marker.
  std::jthread waiter([&] {
    mb.lock();
    mb.unlock();
  });
  for (int i = 0; i < 2000 && server().entry_ids(p, "job").size() < 2; ++i)
    std::this_thread::sleep_for(2ms);
  auto ids = server().entry_ids(p, "job");
  ASSERT_EQ(ids.size(), 2u);
  EXPECT_TRUE(ids[0].starts_with(a.id() + "-"));
  EXPECT_TRUE(ids[1].starts_with(b.id() + "-"));
  EXPECT_FALSE(server().lone_holder(p, "job").has_value());
  EXPECT_EQ(server().command({"GET", p + "h:job"}).at(0), "q");

  ma.unlock();  // hands over through the queue
  waiter.join();
  // The last entry to leave the queue took the queue, its data and the marker with it. The
  // wake token the hand-over left for the holder's waiters stays until it expires.
  const auto token = p + "w:" + ids[0];
  const auto settled = sorted(
      {p + "f:job", p + "fence-floor", p + "s:" + a.id(), p + "s:" + b.id(), token, p + "scheme"});
  EXPECT_EQ(sorted_keys(p + "*"), settled);
  EXPECT_GT(server().integer({"PTTL", token}), 0);

  // Free again: the next acquire is a lone holder once more, with a larger token.
  auto before = server().integer({"GET", p + "f:job"});
  ma.lock();
  EXPECT_TRUE(server().lone_holder(p, "job").has_value());
  EXPECT_GT(static_cast<long long>(ma.token().value), before);
  ma.unlock();
  EXPECT_EQ(sorted_keys(p + "*"), settled);
}

TEST(redis_layout, a_lone_holder_of_a_vanished_session_is_purged_by_the_next_contender) {
  const std::string p = "v" + random_suffix() + ":";
  const auto url = "redis://" + server().address() + "?ttl=10s&prefix=" + p;
  auto a = dlock::session::open(url);
  auto b = dlock::session::open(url);
  dlock::mutex ma(a, "job"), mb(b, "job");
  ma.lock();
  ASSERT_TRUE(server().lone_holder(p, "job").has_value());
  // The holder's session ends on the server (as when its lease runs out while it is paused).
  server().command({"DEL", p + "s:" + a.id()});
  // A listing no longer shows it, and the next contender is granted at once.
  EXPECT_TRUE(dlock::inspect(b, "job").empty());
  ASSERT_TRUE(mb.try_lock_for(2s));
  EXPECT_GT(mb.token().value, ma.token().value);
  auto ids = server().entry_ids(p, "job");
  ASSERT_EQ(ids.size(), 1u);
  EXPECT_TRUE(ids[0].starts_with(b.id() + "-"));
  mb.unlock();
}

// Layout 2 (docs/redis.md): permits and candidates are stored with their kind letter, a
// candidate's value in v:<lock> goes with it, and what registrations and observers leave
// behind (r:, o:, i:) expires; the lasting keys are the fencing counters and the sessions.
TEST(redis_layout, semaphores_and_elections_leave_only_expiring_keys_behind) {
  const std::string p = "e" + random_suffix() + ":";
  const auto url = "redis://" + server().address() + "?ttl=10s&prefix=" + p;
  auto a = dlock::session::open(url);
  auto b = dlock::session::open(url);
  {
    dlock::semaphore sa(a, "sem", 2), sb(b, "sem", 2);
    auto p1 = sa.acquire();
    auto p2 = sa.acquire();
    std::atomic<bool> got{false};
    std::jthread waiter([&] {
      auto p3 = sb.acquire();
      got = true;
    });
    for (int i = 0; i < 2000 && server().entry_ids(p, "sem").size() < 3; ++i)
      std::this_thread::sleep_for(2ms);
    ASSERT_EQ(server().entry_ids(p, "sem").size(), 3u);
    auto meta = server().command({"HGET", p + "m:sem", server().entry_ids(p, "sem")[2]});
    ASSERT_EQ(meta.size(), 1u);
    EXPECT_TRUE(meta[0].starts_with("p|" + b.id() + "|")) << meta[0];
    std::this_thread::sleep_for(100ms);
    EXPECT_FALSE(got);
    p1.release();  // the registered waiter is woken and decides for itself
    waiter.join();
    EXPECT_TRUE(got);
  }
  {
    dlock::election ea(a, "vote"), eb(b, "vote");
    auto lead = ea.campaign("v1");
    lead.proclaim("v|2");
    auto lone = server().lone_holder(p, "vote");  // a lone candidate, kind 'e'
    ASSERT_TRUE(lone.has_value());
    EXPECT_NE(lone->find("|e|" + a.id() + "|"), std::string::npos) << *lone;
    auto ids = server().entry_ids(p, "vote");
    ASSERT_EQ(ids.size(), 1u);
    EXPECT_EQ(server().command({"HGET", p + "v:vote", ids[0]}).at(0), "2|v|2");
    auto seen = eb.leader();
    ASSERT_TRUE(seen.has_value());
    EXPECT_EQ(seen->value, "v|2");
    // An observer waits on o:vote; the resignation wakes it.
    std::jthread observer([&] {
      auto next = eb.next_change(seen, std::chrono::steady_clock::now() + 5s);
      EXPECT_FALSE(next.has_value());
    });
    std::this_thread::sleep_for(100ms);
    lead.resign();
    observer.join();
  }
  for (const auto& k : server().keys(p + "*")) {
    if (k == p + "f:sem" || k == p + "f:vote" || k == p + "fence-floor" || k == p + "scheme" ||
        k.starts_with(p + "s:"))
      continue;
    EXPECT_GT(server().integer({"PTTL", k}), 0) << k << " is left without an expiry";
    EXPECT_FALSE(k.starts_with(p + "v:") || k.starts_with(p + "q:") || k.starts_with(p + "h:"))
        << k;
  }
}

}  // namespace
}  // namespace dlock::test
