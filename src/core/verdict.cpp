#include "core/verdict.hpp"

#include <algorithm>
#include <charconv>

namespace dlock::detail {
namespace {

constexpr std::string_view permit_mark = "~p";
constexpr std::string_view candidate_mark = "~e";

// Locks (exclusive and shared entries mix by design), semaphores of one limit, elections.
int recipe_of(const entry& e) noexcept {
  switch (e.kind) {
    case entry_kind::permit:
      return 1;
    case entry_kind::candidate:
      return 2;
    default:
      return 0;
  }
}

bool same_recipe(const entry& a, const entry& b) noexcept {
  return recipe_of(a) == recipe_of(b) && (a.kind != entry_kind::permit || a.limit == b.limit);
}

// What a recipe reads of an entry: its kind and limit (no strings copied).
entry shape_of(const entry& e) {
  entry out;
  out.kind = e.kind;
  out.limit = e.limit;
  return out;
}

// An unlisted holder as an entry of `like`'s recipe: whoever it is, the backend cannot say,
// so it neither refuses `like` nor lets it by (a reader passes an unlisted reader only).
entry stand_in(const unlisted_holder& u, const entry& like) {
  entry out;
  out.kind =
      like.kind == entry_kind::permit || like.kind == entry_kind::candidate ? like.kind : u.kind;
  out.limit = like.limit;
  return out;
}

constexpr std::size_t unlisted_mark = static_cast<std::size_t>(-1);

}  // namespace

verdict decide(std::span<const entry> queue, std::size_t mine) {
  verdict v;
  const auto& me = queue[mine];
  auto wait = [&](std::size_t first, std::size_t count) {
    v.wait_first = first;
    v.wait_count = count;
    return v;
  };
  auto refuse_if_mixed = [&](std::size_t from, std::size_t to) {
    for (std::size_t i = from; i < to; ++i) {
      if (!same_recipe(queue[i], me)) {
        v.conflict = i;
        return true;
      }
    }
    return false;
  };
  switch (me.kind) {
    case entry_kind::exclusive:
    case entry_kind::candidate:  // the leader is the candidate at the head
      // It holds only at the head, so a stranger further ahead cannot make it overlap: the
      // head and its predecessor are enough to refuse a mixed queue (O(1) per decision).
      if (mine > 0 && (refuse_if_mixed(0, 1) || refuse_if_mixed(mine - 1, mine))) return v;
      v.holds = mine == 0;
      return v.holds ? v : wait(mine - 1, 1);
    case entry_kind::shared:
      // Back to the last writer: a stranger behind it cannot overlap with this reader, and it
      // is seen (refused) once that writer has gone.
      for (std::size_t i = mine; i-- > 0;) {
        if (refuse_if_mixed(i, i + 1)) return v;
        if (queue[i].kind == entry_kind::exclusive) return wait(i, 1);
      }
      v.holds = true;
      return v;
    case entry_kind::permit:
      // It holds only with fewer than `limit` ahead, all of which this scan sees; a waiter
      // also looks at the `limit` it waits on (read anyway), so a stranger queued right
      // ahead of it -- a peer's lock waiter behind held permits -- is refused at once, not
      // when the holders leave; one further back is seen once it is within reach.
      if (refuse_if_mixed(0, std::min<std::size_t>(mine, me.limit))) return v;
      if (mine > me.limit && refuse_if_mixed(mine - me.limit, mine)) return v;
      v.holds = mine < me.limit;
      return v.holds ? v : wait(mine - me.limit, me.limit);
  }
  return v;
}

verdict_reads reads_of(const entry& e) noexcept {
  switch (e.kind) {
    case entry_kind::permit:
      return {e.limit, e.limit};
    case entry_kind::shared:
      return {1, 0};
    default:
      return {1, 1};
  }
}

bool window_suffices(std::span<const entry> view, std::size_t mine,
                     std::optional<std::size_t> gap_at) {
  if (!gap_at) return true;
  const auto& me = view[mine];
  switch (me.kind) {
    case entry_kind::exclusive:
    case entry_kind::candidate:  // the head and the predecessor (decide)
      return *gap_at >= 1 && mine > *gap_at;
    case entry_kind::permit:  // the first `limit` (refused if mixed) and the `limit` ahead
      return *gap_at >= me.limit && mine >= *gap_at + me.limit;
    case entry_kind::shared: {
      // The scan back must stop inside the run, at the last writer (or a stranger).
      if (mine < *gap_at) return false;
      auto v = decide(view, mine);
      if (v.conflict) return *v.conflict >= *gap_at;
      return !v.holds && v.wait_first >= *gap_at;
    }
  }
  return false;
}

std::optional<std::size_t> find_entry(std::span<const entry> queue, std::string_view id) noexcept {
  for (std::size_t i = 0; i < queue.size(); ++i) {
    if (queue[i].id == id) return i;
  }
  return std::nullopt;
}

verdict decide(const queue_view& view, std::size_t mine) {
  const auto& entries = view.entries;
  if (view.unlisted.empty() || view.unlisted.front().before > mine) {
    return decide(std::span<const entry>(entries), mine);  // nothing unlisted ahead
  }
  // The queue up to `mine` with the unlisted holders in their places; `from` maps each
  // place back to its index in view.entries (unlisted_mark: an unlisted holder).
  std::vector<entry> queue;
  std::vector<std::size_t> from;
  queue.reserve(mine + 1 + view.unlisted.size());
  auto u = view.unlisted.begin();
  for (std::size_t i = 0; i <= mine; ++i) {
    for (; u != view.unlisted.end() && u->before <= i; ++u) {
      queue.push_back(stand_in(*u, entries[mine]));
      from.push_back(unlisted_mark);
    }
    queue.push_back(shape_of(entries[i]));
    from.push_back(i);
  }
  auto v = decide(std::span<const entry>(queue), queue.size() - 1);
  verdict out;
  out.holds = v.holds;
  // An unlisted holder is of the deciding entry's recipe: a conflict is always a listed entry.
  if (v.conflict) out.conflict = from[*v.conflict];
  if (v.holds || v.conflict) return out;
  for (std::size_t k = v.wait_first; k < v.wait_first + v.wait_count; ++k) {
    if (from[k] == unlisted_mark) {
      out.wait_change = true;  // it has no id: any change may be its leaving
      return out;
    }
  }
  out.wait_first = from[v.wait_first];
  out.wait_count = v.wait_count;
  return out;
}

bool entry_holds(std::span<const entry> queue, std::size_t index) {
  return decide(queue, index).holds;
}

bool entry_holds(const queue_view& view, std::size_t index) { return decide(view, index).holds; }

bool unlisted_holds(const queue_view& view, std::size_t k) {
  const auto& me = view.unlisted[k];
  entry like;
  like.kind = me.kind;
  std::vector<entry> queue;
  std::size_t u = 0;
  for (std::size_t i = 0; i < std::min(me.before, view.entries.size()); ++i) {
    for (; u < k && view.unlisted[u].before <= i; ++u)
      queue.push_back(stand_in(view.unlisted[u], like));
    queue.push_back(shape_of(view.entries[i]));
  }
  for (; u <= k; ++u) queue.push_back(stand_in(view.unlisted[u], like));
  return decide(std::span<const entry>(queue), queue.size() - 1).holds;
}

std::string permit_entry_id(std::string_view id, std::uint32_t limit) {
  return std::string(id) + std::string(permit_mark) + std::to_string(limit);
}

std::string candidate_entry_id(std::string_view id) {
  return std::string(id) + std::string(candidate_mark);
}

void read_recipes(std::vector<entry>& queue) {
  // From the end of each id: "~e", or at most four digits after "~p", so a lock's entry costs
  // a character or two, not a scan of its id (every listing runs this over the whole queue).
  for (auto& e : queue) {
    const auto& id = e.id;
    if (id.ends_with(candidate_mark)) {
      e.kind = entry_kind::candidate;
      continue;
    }
    std::size_t digits = id.size();
    while (digits > 0 && id.size() - digits < 5 && id[digits - 1] >= '0' && id[digits - 1] <= '9')
      --digits;
    if (digits == id.size() || id.size() - digits > 4 || digits < permit_mark.size() ||
        id.compare(digits - permit_mark.size(), permit_mark.size(), permit_mark) != 0) {
      continue;
    }
    std::uint32_t n = 0;
    std::from_chars(id.data() + digits, id.data() + id.size(), n);
    if (n == 0 || n > max_permits) continue;
    e.kind = entry_kind::permit;
    e.limit = n;
  }
}

}  // namespace dlock::detail
