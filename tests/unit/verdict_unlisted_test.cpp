// Holders a backend knows of but cannot list (queue_view::unlisted: another connection's
// advisory lock, a Redlock view that names no blocker): the recipe counts each where it
// stands, as if it were listed there, and an entry it keeps out waits for the queue to change
// instead of on an entry.
#include <gtest/gtest.h>

#include "core/verdict.hpp"

namespace dlock::detail {
namespace {

// A queue written as letters: 'x' a writer, 's' a reader, 'U' an unlisted writer, 'u' an
// unlisted reader. `listed` gets the same queue with every holder listed (ids "u<k>").
struct spelled {
  queue_view view;
  std::vector<entry> listed;
};

spelled spell(std::string_view letters) {
  spelled out;
  for (char c : letters) {
    const bool unlisted = c == 'U' || c == 'u';
    const auto kind = c == 's' || c == 'u' ? entry_kind::shared : entry_kind::exclusive;
    entry e;
    e.kind = kind;
    if (unlisted) {
      e.id = "u" + std::to_string(out.view.unlisted.size());
      out.view.unlisted.push_back({out.view.entries.size(), kind, "10.0.0.7:5432 backend pid 9"});
    } else {
      e.id = "e" + std::to_string(out.view.entries.size());
      out.view.entries.push_back(e);
    }
    out.listed.push_back(std::move(e));
  }
  return out;
}

// Every queue of up to 6 writers, readers and unlisted ones of both kinds.
template <class F>
void for_every_queue(F&& check) {
  const char letters[] = {'x', 's', 'U', 'u'};
  for (std::size_t n = 1; n <= 6; ++n) {
    std::size_t combos = 1;
    for (std::size_t i = 0; i < n; ++i) combos *= 4;
    for (std::size_t c = 0; c < combos; ++c) {
      std::string q;
      for (std::size_t i = 0, k = c; i < n; ++i, k /= 4) q += letters[k % 4];
      check(q);
    }
  }
}

TEST(verdict_unlisted, an_unlisted_holder_counts_as_if_listed_and_is_waited_for_as_a_change) {
  for_every_queue([](const std::string& q) {
    auto s = spell(q);
    std::size_t listed_at = 0;
    for (std::size_t i = 0; i < s.view.entries.size(); ++i, ++listed_at) {
      while (s.listed[listed_at].id != s.view.entries[i].id) ++listed_at;
      auto v = decide(s.view, i);
      auto full = decide(s.listed, listed_at);
      EXPECT_EQ(v.holds, full.holds) << q << " entry " << i;
      EXPECT_EQ(entry_holds(s.view, i), full.holds) << q << " entry " << i;
      EXPECT_FALSE(v.conflict.has_value()) << q;
      if (full.holds) continue;
      bool on_unlisted = false;
      for (std::size_t k = 0; k < full.wait_count; ++k) {
        on_unlisted |= s.listed[full.wait_first + k].id.starts_with("u");
      }
      EXPECT_EQ(v.wait_change, on_unlisted) << q << " entry " << i;
      if (on_unlisted) {
        EXPECT_EQ(v.wait_count, 0u) << q << ": no entry to wait on";
        continue;
      }
      ASSERT_EQ(v.wait_count, full.wait_count) << q;
      for (std::size_t k = 0; k < v.wait_count; ++k) {
        EXPECT_EQ(s.view.entries[v.wait_first + k].id, s.listed[full.wait_first + k].id) << q;
      }
    }
    for (std::size_t k = 0, at = 0; k < s.view.unlisted.size(); ++k, ++at) {
      while (s.listed[at].id != "u" + std::to_string(k)) ++at;
      EXPECT_EQ(unlisted_holds(s.view, k), decide(s.listed, at).holds) << q << " unlisted " << k;
    }
  });
}

TEST(verdict_unlisted, a_writer_behind_another_connections_lock_waits_for_a_change) {
  auto s = spell("Uxx");  // ?mode=advisory: the server refused e0; e1 queued behind it here
  auto first = decide(s.view, 0);
  EXPECT_FALSE(first.holds);
  EXPECT_TRUE(first.wait_change);
  auto second = decide(s.view, 1);
  EXPECT_FALSE(second.wait_change) << "its predecessor is listed: it waits on that";
  EXPECT_EQ(second.wait_first, 0u);
  EXPECT_EQ(second.wait_count, 1u);
  EXPECT_TRUE(unlisted_holds(s.view, 0));
  EXPECT_TRUE(decide(spell("xU").view, 0).holds) << "what stands behind does not matter";
}

TEST(verdict_unlisted, an_unlisted_holder_takes_the_recipe_of_the_entry_that_decides) {
  // A semaphore of 2: the unlisted holder uses one permit and refuses nobody.
  queue_view v;
  for (int i = 0; i < 3; ++i) {
    entry e;
    e.id = permit_entry_id("s-" + std::to_string(i), 2);
    v.entries.push_back(e);
  }
  read_recipes(v.entries);
  v.unlisted.push_back({0, entry_kind::exclusive, {}});
  EXPECT_TRUE(decide(v, 0).holds);
  EXPECT_FALSE(decide(v, 0).conflict);
  auto second = decide(v, 1);
  EXPECT_FALSE(second.holds);
  EXPECT_TRUE(second.wait_change) << "the unlisted holder is among the 2 ahead";
  auto third = decide(v, 2);
  EXPECT_FALSE(third.wait_change);
  EXPECT_EQ(third.wait_first, 0u);
  EXPECT_EQ(third.wait_count, 2u);

  // An election's candidate behind one: no leader yet, and no conflict either.
  queue_view e;
  e.entries.resize(1);
  e.entries[0].id = candidate_entry_id("c-1");
  read_recipes(e.entries);
  e.unlisted.push_back({0, entry_kind::shared, {}});
  EXPECT_FALSE(decide(e, 0).holds);
  EXPECT_TRUE(decide(e, 0).wait_change);
  EXPECT_FALSE(decide(e, 0).conflict);
}

TEST(verdict_unlisted, a_conflict_names_the_listed_entry_past_unlisted_ones) {
  queue_view v;
  v.entries.resize(2);
  v.entries[0].id = "lock-1";
  v.entries[1].id = permit_entry_id("sem-1", 3);
  read_recipes(v.entries);
  v.unlisted.push_back({0, entry_kind::exclusive, {}});
  EXPECT_EQ(decide(v, 1).conflict, 0u) << "an index of view.entries";
}

}  // namespace
}  // namespace dlock::detail
