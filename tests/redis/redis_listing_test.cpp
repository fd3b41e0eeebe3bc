// The queue script's whole-queue reply ({4, counter, id/score pairs, metas, session TTLs,
// candidates' values}: redis_scripts.hpp) as a server's bytes become it, parsed (no server).
#include <gtest/gtest.h>
#include <hiredis/hiredis.h>

#include <memory>
#include <string>

#include "backends/redis/redis_scripts.hpp"

namespace dlock::detail::redis {
namespace {

reply_ptr read_reply(const std::string& resp) {
  std::unique_ptr<redisReader, decltype(&redisReaderFree)> reader(redisReaderCreate(),
                                                                  &redisReaderFree);
  EXPECT_EQ(redisReaderFeed(reader.get(), resp.data(), resp.size()), REDIS_OK);
  void* raw = nullptr;
  EXPECT_EQ(redisReaderGetReply(reader.get(), &raw), REDIS_OK);
  return reply_ptr(static_cast<redisReply*>(raw));
}

std::string bulk(const std::string& s) {
  return "$" + std::to_string(s.size()) + "\r\n" + s + "\r\n";
}
std::string array(std::initializer_list<std::string> items) {
  std::string out = "*" + std::to_string(items.size()) + "\r\n";
  for (const auto& i : items) out += i;
  return out;
}
std::string integer(long long n) { return ":" + std::to_string(n) + "\r\n"; }

TEST(redis_listing, a_whole_queue_reply_gives_each_entry_its_fields) {
  const std::string a(16, 'a'), b(16, 'b');
  auto r = read_reply(array(
      {integer(4), integer(7),
       array({bulk("t1." + a + "-1~e"), bulk("5"), bulk("t2." + b + "-1"), bulk("6")}),
       array({bulk("e|" + a + "|1733000000000|7|host pid=1 a|b"), bulk("s|" + b + "|||host")}),
       array({bulk(a), integer(1400), bulk(b), integer(-1)}),
       array({bulk("t1." + a + "-1~e"), bulk("3|the|value"), bulk("gone-1~e"), bulk("1|x")}),
       bulk("t1." + a + "-1~e|9")}));
  target where;
  where.where = "test";
  auto v = parse_queue_reply(where, r.get());
  ASSERT_TRUE(v) << v.error().message;
  EXPECT_EQ(v->counter, 7u);
  ASSERT_TRUE(v->term);
  EXPECT_EQ(v->term->first, "t1." + a + "-1~e");
  EXPECT_EQ(v->term->second, 9u);
  ASSERT_EQ(v->entries.size(), 2u);
  const auto& first = v->entries[0];
  EXPECT_EQ(first.e.id, "t1." + a + "-1~e");
  EXPECT_EQ(first.e.token, 5u);
  EXPECT_EQ(first.e.kind, entry_kind::exclusive);
  EXPECT_EQ(first.session, a);
  EXPECT_EQ(first.grant, std::optional<std::uint64_t>{7});
  EXPECT_EQ(first.e.lease_left, std::chrono::milliseconds{1400});
  EXPECT_EQ(first.e.owner, "host pid=1 a|b") << "an owner may hold '|'";
  EXPECT_EQ(first.e.version, 3u);
  EXPECT_EQ(first.e.value, "the|value");
  const auto& second = v->entries[1];
  EXPECT_EQ(second.e.kind, entry_kind::shared);
  EXPECT_FALSE(second.grant);
  EXPECT_FALSE(second.e.lease_left) << "no expiry (-1) is unknown";
  EXPECT_FALSE(second.e.since);
  EXPECT_EQ(second.e.version, 0u);
}

// A lone candidate's listing on Redlock ends with the term record; "" is none.
TEST(redis_listing, a_lone_candidates_listing_carries_the_term_record) {
  const std::string a(16, 'a');
  const std::string packed = "t1." + a + "-1~e|5|e|" + a + "|1733000000000|5|1400|1|host";
  target where;
  where.where = "test";
  auto r = read_reply(
      array({integer(1), integer(5), bulk(packed), bulk("v"), bulk("t1." + a + "-1~e|6")}));
  auto v = parse_queue_reply(where, r.get());
  ASSERT_TRUE(v) << v.error().message;
  ASSERT_EQ(v->entries.size(), 1u);
  EXPECT_EQ(v->entries[0].e.value, "v");
  ASSERT_TRUE(v->term);
  EXPECT_EQ(v->term->second, 6u);
  auto none = read_reply(array({integer(1), integer(5), bulk(packed), bulk("v"), bulk("")}));
  auto w = parse_queue_reply(where, none.get());
  ASSERT_TRUE(w) << w.error().message;
  EXPECT_FALSE(w->term);
  auto bad = read_reply(array({integer(1), integer(5), bulk(packed), bulk("v"), bulk("x|y")}));
  EXPECT_FALSE(parse_queue_reply(where, bad.get()));
}

TEST(redis_listing, a_malformed_whole_queue_reply_is_a_protocol_error) {
  target where;
  where.where = "test";
  const std::string a(16, 'a');
  for (const auto& resp : {
           // pairs and metas of different lengths
           array({integer(4), integer(1), array({bulk("x-1"), bulk("1")}), array({}), array({}),
                  array({}), bulk("")}),
           // a meta without its fields
           array({integer(4), integer(1), array({bulk("x-1"), bulk("1")}), array({bulk("x|" + a)}),
                  array({}), array({}), bulk("")}),
           // a score that is no number
           array({integer(4), integer(1), array({bulk("x-1"), bulk("one")}),
                  array({bulk("x|" + a + "|||o")}), array({}), array({}), bulk("")}),
           // the term record missing, or without a token
           array({integer(4), integer(1), array({bulk("x-1"), bulk("1")}),
                  array({bulk("x|" + a + "|||o")}), array({}), array({})}),
           array({integer(4), integer(1), array({bulk("x-1"), bulk("1")}),
                  array({bulk("x|" + a + "|||o")}), array({}), array({}), bulk("x-1|")}),
           // missing parts
           array({integer(4), integer(1), array({})}),
       }) {
    auto r = read_reply(resp);
    auto v = parse_queue_reply(where, r.get());
    ASSERT_FALSE(v);
    EXPECT_EQ(v.error().code, make_error_code(errc::protocol_error));
  }
}

}  // namespace
}  // namespace dlock::detail::redis
