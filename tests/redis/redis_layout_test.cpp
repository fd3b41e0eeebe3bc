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
  EXPECT_EQ(sorted_keys(p + "*"),
            sorted({p + "f:job", p + "h:job", p + "s:" + a.id(), p + "s:" + b.id()}));

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
  // The last entry to leave the queue took the queue, its data and the marker with it.
  EXPECT_EQ(sorted_keys(p + "*"), sorted({p + "f:job", p + "s:" + a.id(), p + "s:" + b.id()}));

  // Free again: the next acquire is a lone holder once more, with a larger token.
  auto before = server().integer({"GET", p + "f:job"});
  ma.lock();
  EXPECT_TRUE(server().lone_holder(p, "job").has_value());
  EXPECT_GT(static_cast<long long>(ma.token().value), before);
  ma.unlock();
  EXPECT_EQ(sorted_keys(p + "*"), sorted({p + "f:job", p + "s:" + a.id(), p + "s:" + b.id()}));
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

}  // namespace
}  // namespace dlock::test
