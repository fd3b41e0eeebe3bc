// The recipes' pure decisions, checked against a direct reading of the ZooKeeper recipe
// over every queue of readers and writers up to length 6.
#include "core/verdict.hpp"

#include <gtest/gtest.h>

namespace dlock::detail {
namespace {

std::vector<std::size_t> waits(const verdict& v) {
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < v.wait_count; ++i) out.push_back(v.wait_first + i);
  return out;
}

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
            EXPECT_EQ(waits(v), std::vector<std::size_t>{i - 1})
                << "a writer waits on its predecessor";
          }
        } else {
          EXPECT_EQ(v.holds, !writer_ahead);
          if (writer_ahead) {
            EXPECT_EQ(waits(v), std::vector<std::size_t>{*last_writer})
                << "a reader waits on the last writer ahead";
          }
        }
        if (v.holds) ++holders;
        EXPECT_FALSE(v.conflict.has_value());
        for (auto w : waits(v)) EXPECT_LT(w, i) << "nobody waits on an entry behind it";
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

std::vector<entry> permits(std::size_t n, std::uint32_t limit) {
  std::vector<entry> q(n);
  for (std::size_t i = 0; i < n; ++i) {
    q[i].id = permit_entry_id("s-" + std::to_string(i), limit);
    q[i].token = i + 1;
  }
  read_recipes(q);
  return q;
}

TEST(verdict, a_permit_holds_with_fewer_than_its_limit_ahead_and_waits_on_the_limit_ahead) {
  for (std::uint32_t limit = 1; limit <= 4; ++limit) {
    for (std::size_t n = 1; n <= 8; ++n) {
      auto q = permits(n, limit);
      std::size_t holders = 0;
      for (std::size_t i = 0; i < n; ++i) {
        ASSERT_EQ(q[i].kind, entry_kind::permit);
        ASSERT_EQ(q[i].limit, limit);
        auto v = decide(q, i);
        EXPECT_FALSE(v.conflict.has_value());
        EXPECT_EQ(v.holds, i < limit);
        if (v.holds) {
          ++holders;
          EXPECT_TRUE(waits(v).empty());
        } else {
          std::vector<std::size_t> expected;
          for (std::size_t j = i - limit; j < i; ++j) expected.push_back(j);
          EXPECT_EQ(waits(v), expected) << "limit " << limit << " entry " << i;
        }
      }
      EXPECT_EQ(holders, std::min<std::size_t>(n, limit)) << "never more than the limit hold";
    }
  }
}

// No missed wake-up: an entry that does not hold keeps not holding whichever entries leave,
// as long as none of those it waits on does. (A waiter sleeps until one of its wait set
// leaves; were this false, it would sleep through its grant.) Every queue up to 7 entries of
// readers and writers, and of permits with limits 1 to 3; every set of departures.
void expect_no_missed_wakeup(const std::vector<entry>& q) {
  const auto n = q.size();
  for (std::size_t i = 0; i < n; ++i) {
    auto v = decide(q, i);
    if (v.holds) continue;
    for (unsigned gone = 1; gone < (1u << n); ++gone) {
      if (gone & (1u << i)) continue;
      bool touches = false;
      for (auto w : waits(v)) touches |= (gone >> w) & 1;
      if (touches) continue;
      std::vector<entry> rest;
      std::size_t me = 0;
      for (std::size_t j = 0; j < n; ++j) {
        if (j == i) me = rest.size();
        if (!((gone >> j) & 1)) rest.push_back(q[j]);
      }
      EXPECT_FALSE(decide(rest, me).holds)
          << "entry " << i << " of " << n << " granted by departures it does not wait on (" << gone
          << ")";
    }
  }
}

TEST(verdict, no_departure_outside_the_wait_set_grants_a_waiter) {
  for (std::size_t n = 1; n <= 7; ++n) {
    for (unsigned mask = 0; mask < (1u << n); ++mask) expect_no_missed_wakeup(make_queue(mask, n));
    for (std::uint32_t limit = 1; limit <= 3; ++limit) expect_no_missed_wakeup(permits(n, limit));
  }
}

TEST(verdict, an_entry_behind_another_recipe_or_limit_is_refused_naming_it) {
  auto q = permits(3, 2);
  auto other = permits(1, 3);
  q.push_back(other[0]);  // limit 3 behind limit-2 permits
  auto v = decide(q, 3);
  EXPECT_FALSE(v.holds);
  EXPECT_EQ(v.conflict, 0u);
  auto lock = make_queue(0, 1);  // a mutex's entry
  q = permits(1, 2);
  q.push_back(lock[0]);
  EXPECT_EQ(decide(q, 1).conflict, 0u) << "a lock queued behind a permit";
  q = make_queue(1, 1);  // a reader
  q.push_back(permits(1, 2)[0]);
  EXPECT_EQ(decide(q, 1).conflict, 0u) << "a permit queued behind a reader";
  EXPECT_FALSE(decide(q, 0).conflict.has_value()) << "what joined behind does not matter";
  EXPECT_TRUE(decide(q, 0).holds);
  // A peer's lock waiter (etcdctl, kazoo) behind held permits, and a permit behind it: the
  // permit is refused at once, not once the holders leave (a tester waited 6 s for exit 64).
  q = permits(2, 2);
  q.push_back(lock[0]);
  q.push_back(permits(1, 2)[0]);
  EXPECT_EQ(decide(q, 3).conflict, 2u) << "a permit queued behind a stranger it waits on";
}

// A queue that mixes recipes by mistake (a mutex and a semaphore of one name, two limits)
// never grants overlapping holds: whoever holds is refused nothing and compatible with every
// other holder. Every queue up to 6 entries of writers, readers, and permits of limits 1 and 2.
TEST(verdict, a_mixed_queue_never_grants_incompatible_holders) {
  const auto one = permits(1, 1).front(), two = permits(1, 2).front();
  for (std::size_t n = 1; n <= 6; ++n) {
    std::size_t combos = 1;
    for (std::size_t i = 0; i < n; ++i) combos *= 4;
    for (std::size_t c = 0; c < combos; ++c) {
      std::vector<entry> q;
      for (std::size_t i = 0, k = c; i < n; ++i, k /= 4) {
        q.push_back(k % 4 == 0   ? make_queue(0, 1)[0]
                    : k % 4 == 1 ? make_queue(1, 1)[0]
                    : k % 4 == 2 ? one
                                 : two);
        q.back().id = "e" + std::to_string(i);
      }
      std::vector<std::size_t> holders;
      for (std::size_t i = 0; i < n; ++i) {
        auto v = decide(q, i);
        if (v.holds) holders.push_back(i);
        EXPECT_FALSE(v.holds && v.conflict) << "a refused entry holds";
      }
      for (auto a : holders) {
        for (auto b : holders) {
          if (a == b) continue;
          const auto &x = q[a], &y = q[b];
          bool ok =
              (x.kind == entry_kind::shared && y.kind == entry_kind::shared) ||
              (x.kind == entry_kind::permit && y.kind == entry_kind::permit && x.limit == y.limit);
          EXPECT_TRUE(ok) << "entries " << a << " and " << b << " hold together (queue " << c
                          << " of length " << n << ")";
        }
        if (q[a].kind == entry_kind::permit) {
          EXPECT_LE(holders.size(), q[a].limit);
        }
      }
    }
  }
}

TEST(verdict, permit_ids_carry_the_limit_and_nothing_else_is_read_as_one) {
  std::vector<entry> q(6);
  q[0].id = permit_entry_id("abc-1", 5);
  q[1].id = "abc-2";
  q[2].id = "abc-3~p0";
  q[3].id = "abc-4~p1001";
  q[4].id = "abc-5~p7x";
  q[5].id = "abc-6~p1000";
  read_recipes(q);
  EXPECT_EQ(q[0].kind, entry_kind::permit);
  EXPECT_EQ(q[0].limit, 5u);
  for (int i = 1; i <= 4; ++i) EXPECT_EQ(q[i].kind, entry_kind::exclusive) << q[i].id;
  EXPECT_EQ(q[5].limit, 1000u);
}

// An election's candidates: the head leads, every other waits on the one just ahead (no
// herd), and a candidate never shares a queue with a lock's or a semaphore's entries.
TEST(verdict, the_head_candidate_leads_and_each_other_waits_on_its_predecessor) {
  std::vector<entry> q(4);
  for (std::size_t i = 0; i < q.size(); ++i) {
    q[i].id = candidate_entry_id("s-" + std::to_string(i));
    q[i].token = i + 1;
  }
  read_recipes(q);
  for (std::size_t i = 0; i < q.size(); ++i) {
    EXPECT_EQ(q[i].kind, entry_kind::candidate);
    auto v = decide(q, i);
    EXPECT_EQ(v.holds, i == 0);
    EXPECT_FALSE(v.conflict);
    if (i > 0) {
      EXPECT_EQ(v.wait_first, i - 1);
      EXPECT_EQ(v.wait_count, 1u);
    }
  }
}

TEST(verdict, candidates_and_other_recipes_refuse_each_other) {
  for (auto other : {std::string("lock-1"), permit_entry_id("sem-1", 3)}) {
    std::vector<entry> q(2);
    q[0].id = other;
    q[1].id = candidate_entry_id("cand-1");
    read_recipes(q);
    EXPECT_EQ(decide(q, 1).conflict, 0u) << other << " ahead of a candidate";
    std::swap(q[0], q[1]);
    EXPECT_EQ(decide(q, 1).conflict, 0u) << "a candidate ahead of " << other;
  }
}

// A backend may list a waiter's window: the queue's first entries, a gap, then the entries just
// ahead of the waiter (etcd). Whenever window_suffices says such a view is enough, it decides
// as the whole queue does (same holding, same awaited entries, same refusal); for the reading
// reads_of asks (a shared entry's page: 2 here), it is enough for every lock and permit entry.
void expect_windows_decide_as_the_queue(const std::vector<entry>& q) {
  const auto ids = [](std::span<const entry> v, const verdict& d) {
    std::vector<std::string> out;
    for (std::size_t i = 0; i < d.wait_count; ++i) out.push_back(v[d.wait_first + i].id);
    if (d.conflict) out.push_back("conflict " + v[*d.conflict].id);
    return out;
  };
  for (std::size_t mine = 0; mine < q.size(); ++mine) {
    const auto full = decide(q, mine);
    for (std::size_t head = 0; head <= mine; ++head) {
      for (std::size_t ahead = 0; head + ahead <= mine; ++ahead) {
        const bool gap = head + ahead < mine;
        std::vector<entry> view(q.begin(), q.begin() + static_cast<std::ptrdiff_t>(head));
        view.insert(view.end(), q.begin() + static_cast<std::ptrdiff_t>(mine - ahead),
                    q.begin() + static_cast<std::ptrdiff_t>(mine + 1));
        const auto at = view.size() - 1;
        const auto gap_at = gap ? std::optional<std::size_t>(head) : std::nullopt;
        if (!window_suffices(view, at, gap_at)) {
          auto want = reads_of(q[mine]);
          EXPECT_FALSE(q[mine].kind != entry_kind::shared && head >= want.head &&
                       ahead >= want.ahead)
              << "entry " << mine << ": the reading it asks for falls short";
          continue;
        }
        auto part = decide(view, at);
        EXPECT_EQ(part.holds, full.holds)
            << "entry " << mine << " head " << head << " ahead " << ahead;
        EXPECT_EQ(ids(view, part), ids(q, full)) << "entry " << mine << " head " << head;
      }
    }
  }
}

TEST(verdict, a_window_that_suffices_decides_as_the_whole_queue) {
  for (std::size_t n = 1; n <= 7; ++n) {
    for (unsigned mask = 0; mask < (1u << n); ++mask) {
      expect_windows_decide_as_the_queue(make_queue(mask, n));
    }
    for (std::uint32_t limit = 1; limit <= 3; ++limit) {
      expect_windows_decide_as_the_queue(permits(n, limit));
    }
  }
  // A stranger (a semaphore's entry) among writers: found by the window as by the queue.
  auto q = make_queue(0, 6);
  q[1] = permits(1, 2)[0];
  q[1].id = "p1";
  expect_windows_decide_as_the_queue(q);
}

}  // namespace
}  // namespace dlock::detail
