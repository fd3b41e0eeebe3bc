// Redlock's merge of per-master queues (pure; no server).
#include "backends/redis/redis_merge.hpp"

#include <gtest/gtest.h>

#include "core/verdict.hpp"

namespace dlock::detail::redis {
namespace {

// A master's queue from ids in order; scores 1, 2, ...; grant = score for the head.
node_view queue(std::initializer_list<const char*> ids, std::uint64_t counter = 0) {
  node_view v;
  std::uint64_t score = 0;
  for (const char* id : ids) {
    node_entry ne;
    ne.e.id = id;
    ne.e.token = ++score;
    if (score == 1) ne.grant = score;
    v.entries.push_back(std::move(ne));
  }
  v.counter = counter ? counter : score;
  return v;
}

using views = std::vector<std::optional<node_view>>;

TEST(redlock_merge, an_entry_first_on_a_majority_holds_with_the_largest_grant) {
  // Counters at the grants (as right after a grant): nothing to raise.
  views v{queue({"a", "b"}, 1), queue({"a", "b"}, 1), queue({"a", "b"}, 1)};
  auto m = merge_views(v, {"a"}, 2);
  ASSERT_EQ(m.entries.size(), 1u);
  EXPECT_EQ(m.entries[0].id, "a");
  ASSERT_EQ(m.grants.size(), 1u);
  EXPECT_EQ(m.grants[0].token, 1u);
  EXPECT_EQ(m.grants[0].needed, 0u);
  EXPECT_TRUE(m.resubmit.empty());
}

// The third master gave the same number to another entry: its counter is not a's grant, so
// a's token goes above it (enqueues no longer move counters, so an equal counter elsewhere
// may be another holder's token; redlock_tokens.a_token_never_repeats_when_one_master_loses_
// its_data), and a majority is raised to it.
TEST(redlock_merge, a_grant_equal_to_another_masters_counter_goes_above_it) {
  views v{queue({"a", "b"}, 1), queue({"a", "b"}, 1), queue({"b", "a"}, 1)};
  auto m = merge_views(v, {"a"}, 2);
  ASSERT_EQ(m.grants.size(), 1u);
  EXPECT_EQ(m.grants[0].token, 2u);
  EXPECT_EQ(m.grants[0].raise_on.size(), 3u);
  EXPECT_EQ(m.grants[0].needed, 2u);
}

TEST(redlock_merge, a_waiter_waits_on_the_majority_holder_not_on_a_minority_head) {
  // c is first on master 0 only; x holds on masters 1 and 2 and blocks b there.
  views v{queue({"c", "b"}), queue({"x", "b", "c"}), queue({"x", "b", "c"})};
  auto m = merge_views(v, {"b"}, 2);
  ASSERT_EQ(m.entries.size(), 2u);
  EXPECT_EQ(m.entries[0].id, "x");
  EXPECT_EQ(m.entries[1].id, "b");
  ASSERT_EQ(m.wait_node.size(), 1u);
  EXPECT_EQ(m.wait_node[0].second, 1u);
  EXPECT_TRUE(m.resubmit.empty());
}

TEST(redlock_merge, a_split_requeues_every_partial_holder_but_the_winner) {
  views v{queue({"a", "b", "c"}), queue({"b", "c", "a"}), queue({"c", "a", "b"})};
  EXPECT_TRUE(merge_views(v, {"a"}, 2).resubmit.empty()) << "a wins: smallest id";
  EXPECT_EQ(merge_views(v, {"b"}, 2).resubmit, std::vector<std::string>{"b"});
  EXPECT_EQ(merge_views(v, {"c"}, 2).resubmit, std::vector<std::string>{"c"});
}

// Two waiters of one session, each first on one master, x on the third: no one holds. Each
// would wait on the other (b on c, c on b), a cycle no push breaks; both look again instead.
TEST(redlock_merge, in_a_split_no_waiter_waits_on_a_named_entry) {
  views v{queue({"c", "b"}), queue({"b", "c"}), queue({"x", "b", "c"})};
  auto m = merge_views(v, {"b", "c"}, 2);
  EXPECT_TRUE(m.grants.empty());
  EXPECT_TRUE(m.wait_node.empty()) << "a split's waiter named " << m.wait_node[0].first;
  ASSERT_EQ(m.unlisted.size(), 2u);
  ASSERT_EQ(m.entries.size(), 2u);
  const queue_view view{m.entries, {}, m.unlisted};
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(m.unlisted[i].before, i);
    EXPECT_FALSE(decide(view, i).holds);
    EXPECT_TRUE(decide(view, i).wait_change);
  }
  EXPECT_EQ(m.resubmit, std::vector<std::string>{"c"}) << "b wins the tie: smallest id";
}

// In a split only the partial holders look again; a waiter behind them names an entry that
// blocks it on every master (1000 waiters all looking again every few milliseconds kept
// three masters busy and granted 4-9 of them). Never a loser, though: its re-queue takes
// back its wake token, and a waiter that blocked a moment late would sleep through it.
TEST(redlock_merge, in_a_split_a_waiter_behind_it_names_an_entry_that_will_not_be_requeued) {
  views v{queue({"a", "k", "w"}), queue({"b", "k", "w"}), queue({"c", "k", "w"})};
  auto m = merge_views(v, {"w"}, 2);
  ASSERT_EQ(m.wait_node.size(), 1u);
  EXPECT_EQ(m.wait_node[0].first, "k");
  EXPECT_TRUE(m.unlisted.empty());

  // Behind a loser only (b: first on master 0, re-queued since a wins the tie): no name.
  views loser{queue({"b", "w", "a"}), queue({"a", "b", "w"}), queue({"c", "b", "w"})};
  auto l = merge_views(loser, {"w"}, 2);
  EXPECT_TRUE(l.wait_node.empty()) << "named " << l.wait_node[0].first;
  EXPECT_EQ(l.unlisted.size(), 1u);
}

// h holds everywhere; a and b queue behind it in different orders, behind c or d. Each
// master's "entry just ahead" makes a wait on b (on masters 1 and 2) and b on a (master 0):
// a cycle nobody in it breaks when h leaves. Waits go only forward in the reference
// master's order, or to the majority holder.
TEST(redlock_merge, waits_between_waiters_never_close_a_cycle) {
  views v{queue({"h", "c", "a", "b"}), queue({"h", "c", "b", "a"}), queue({"h", "d", "b", "a"})};
  auto m = merge_views(v, {"a", "b"}, 2);
  auto awaited_by = [&](const std::string& id) {
    auto pos = find_entry(m.entries, id);
    EXPECT_TRUE(pos && *pos > 0) << id << " waits on no named entry";
    return pos && *pos > 0 ? m.entries[*pos - 1].id : std::string();
  };
  const auto a = awaited_by("a"), b = awaited_by("b");
  EXPECT_FALSE(a == "b" && b == "a") << "a waits on b and b on a";
  EXPECT_TRUE(a == "c" || a == "h") << "a waits on " << a;
  EXPECT_TRUE(b == "a" || b == "c" || b == "h") << "b waits on " << b;
}

// y waits on z, both own, and y sorts first by id: z must first show in its own place
// (behind h), else the engine, finding z's first occurrence (y's blocker slot), takes that
// slot's predecessor for what z waits on.
TEST(redlock_merge, an_own_waiter_first_shows_in_its_own_place) {
  views v{queue({"h", "z", "y"}), queue({"h", "z", "y"}), queue({"h", "z", "y"})};
  auto m = merge_views(v, {"y", "z"}, 2);
  auto z = find_entry(m.entries, "z"), y = find_entry(m.entries, "y");
  ASSERT_TRUE(z && y && *z > 0 && *y > 0);
  EXPECT_EQ(m.entries[*z - 1].id, "h");
  EXPECT_EQ(m.entries[*y - 1].id, "z");
}

TEST(redlock_merge, a_grant_waits_for_a_majority_of_counters_to_reach_its_token) {
  auto lagging = queue({"a"}, 1);
  auto ahead = queue({"a"}, 9);
  ahead.entries[0].grant = 9;
  views v{ahead, lagging, lagging};
  auto m = merge_views(v, {"a"}, 2);
  ASSERT_EQ(m.grants.size(), 1u);
  EXPECT_EQ(m.grants[0].token, 9u);
  EXPECT_EQ(m.entries[0].token, 9u);
  EXPECT_EQ(m.grants[0].needed, 1u);
  EXPECT_EQ(m.grants[0].raise_on, (std::vector<std::size_t>{1, 2}));
}

TEST(redlock_merge, a_grant_goes_above_a_refusing_masters_higher_counter_and_raises_all) {
  // Master 0 lost its data (counter 1); master 1 still holds x with token 5 (counter 6 after
  // our enqueue there); master 2 granted us 5, as master 1 once granted x.
  auto empty = queue({"a"}, 1);
  auto refusing = queue({"x", "a"}, 6);
  refusing.entries[0].grant = 5;
  auto granting = queue({"a"}, 5);
  granting.entries[0].grant = 5;
  views v{empty, refusing, granting};
  auto m = merge_views(v, {"a"}, 2);
  ASSERT_EQ(m.grants.size(), 1u);
  EXPECT_EQ(m.grants[0].token, 7u) << "above every counter that answered, x's token included";
  EXPECT_EQ(m.grants[0].raise_on, (std::vector<std::size_t>{0, 1, 2}));
  EXPECT_EQ(m.grants[0].needed, 2u);

  // Once settled, the token stays what it was, whatever the counters did since.
  auto later = merge_views(v, {"a"}, 2, {{"a", 7}});
  ASSERT_EQ(later.grants.size(), 1u);
  EXPECT_EQ(later.grants[0].token, 7u);
  EXPECT_TRUE(later.grants[0].raise_on.empty());
  EXPECT_EQ(later.grants[0].needed, 0u);
}

TEST(redlock_merge, an_entry_on_too_few_masters_is_requeued) {
  views v{queue({"a"}), queue({}), std::nullopt};
  auto m = merge_views(v, {"a"}, 2);
  EXPECT_EQ(m.resubmit, std::vector<std::string>{"a"});
  EXPECT_TRUE(m.grants.empty());
}

TEST(redlock_merge, a_waiter_no_entry_keeps_out_waits_for_a_change_behind_an_unlisted_holder) {
  // b heads master 0 only and is missing from the others: no entry to name, yet no grant.
  views v{queue({"b"}), queue({"x"}), queue({"x"})};
  auto m = merge_views(v, {"b"}, 2);
  ASSERT_EQ(m.entries.size(), 1u);
  EXPECT_EQ(m.entries[0].id, "b");
  ASSERT_EQ(m.unlisted.size(), 1u);
  EXPECT_EQ(m.unlisted[0].before, 0u);
  EXPECT_TRUE(m.wait_node.empty());
  queue_view view{m.entries, {}, m.unlisted};
  auto d = decide(view, 0);
  EXPECT_FALSE(d.holds);
  EXPECT_TRUE(d.wait_change);

  // Own holders come first: the unlisted holder stays just ahead of its waiter.
  views both{queue({"a"}), queue({"b"}), queue({"b"})};
  auto m2 = merge_views(both, {"a", "b"}, 2);
  ASSERT_EQ(m2.entries.size(), 2u);
  EXPECT_EQ(m2.entries[0].id, "b");
  EXPECT_EQ(m2.entries[1].id, "a");
  ASSERT_EQ(m2.unlisted.size(), 1u);
  EXPECT_EQ(m2.unlisted[0].before, 1u);

  // A waiter with a blocker to name has none.
  views named{queue({"x", "b"}), queue({"x", "b"}), queue({"b"})};
  EXPECT_TRUE(merge_views(named, {"b"}, 2).unlisted.empty());
}

TEST(redlock_merge, the_client_names_what_may_stay_ahead_of_each_own_entry_to_stamp) {
  // Master 0: b waits behind a (exclusive): stamped once nothing is ahead. Master 1: the
  // reader r2 behind the reader r1 holds with r1 ahead, and keeps holding when r1 goes; the
  // reader r4 behind a writer holds once the writer and everything before it have gone.
  auto locks = queue({"a", "b"});
  auto readers = queue({"r1", "r2", "w", "r3", "r4"});
  for (auto& ne : readers.entries) {
    if (ne.e.id != "w") ne.e.kind = entry_kind::shared;
  }
  readers.entries[0].grant.reset();
  views v{locks, readers, std::nullopt};
  auto m = merge_views(v, {"a", "b", "r2", "r4"}, 2);
  ASSERT_EQ(m.stamps.size(), 3u);
  ASSERT_EQ(m.stamps[0].size(), 1u) << "a has its grant already";
  EXPECT_EQ(m.stamps[0][0].id, "b");
  EXPECT_TRUE(m.stamps[0][0].may_stay_ahead.empty());
  ASSERT_EQ(m.stamps[1].size(), 2u);
  EXPECT_EQ(m.stamps[1][0].id, "r2");
  EXPECT_EQ(m.stamps[1][0].may_stay_ahead, std::vector<std::string>{"r1"});
  EXPECT_EQ(m.stamps[1][1].id, "r4");
  EXPECT_EQ(m.stamps[1][1].may_stay_ahead, std::vector<std::string>{"r3"});
  EXPECT_TRUE(m.stamps[2].empty()) << "a master that did not answer";
}

}  // namespace
}  // namespace dlock::detail::redis
