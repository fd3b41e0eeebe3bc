// The recipes' pure decisions, checked against a direct reading of the ZooKeeper recipe
// over every queue of readers and writers up to length 6.
#include "core/verdict.hpp"

#include <gtest/gtest.h>

namespace dlock::detail {
namespace {

std::vector<entry> make_queue(unsigned mask, std::size_t n) {
  std::vector<entry> q(n);
  for (std::size_t i = 0; i < n; ++i) {
    q[i].id = "e" + std::to_string(i);
    q[i].token = i + 1;
    q[i].kind = (mask >> i) & 1 ? entry_kind::shared : entry_kind::exclusive;
  }
  return q;
}

TEST(verdict, matches_the_recipe_for_every_queue_up_to_six_entries) {
  for (std::size_t n = 1; n <= 6; ++n) {
    for (unsigned mask = 0; mask < (1u << n); ++mask) {
      auto q = make_queue(mask, n);
      std::size_t holders = 0;
      for (std::size_t i = 0; i < n; ++i) {
        auto v = decide(q, i);
        bool writer_ahead = false;
        std::optional<std::size_t> last_writer;
        for (std::size_t j = 0; j < i; ++j) {
          if (q[j].kind == entry_kind::exclusive) {
            writer_ahead = true;
            last_writer = j;
          }
        }
        if (q[i].kind == entry_kind::exclusive) {
          EXPECT_EQ(v.holds, i == 0);
          if (i > 0) {
            EXPECT_EQ(v.wait_on, i - 1) << "a writer waits on its predecessor";
          }
        } else {
          EXPECT_EQ(v.holds, !writer_ahead);
          if (writer_ahead) {
            EXPECT_EQ(v.wait_on, last_writer) << "a reader waits on the last writer ahead";
          }
        }
        if (v.holds) ++holders;
        if (!v.holds) {
          EXPECT_LT(*v.wait_on, i) << "nobody waits on an entry behind it";
        }
      }
      // Exclusion: a holding writer is the only holder.
      if (q[0].kind == entry_kind::exclusive) {
        EXPECT_EQ(holders, 1u);
      }
      EXPECT_GE(holders, 1u) << "the head of a queue always holds";
    }
  }
}

TEST(verdict, find_entry_finds_by_id) {
  auto q = make_queue(0, 3);
  EXPECT_EQ(find_entry(q, "e2"), 2u);
  EXPECT_FALSE(find_entry(q, "nope").has_value());
}

}  // namespace
}  // namespace dlock::detail
