#include "core/verdict.hpp"

#include <charconv>

namespace dlock::detail {
namespace {

constexpr std::string_view permit_mark = "~p";

bool same_recipe(const entry& a, const entry& b) noexcept {
  bool pa = a.kind == entry_kind::permit, pb = b.kind == entry_kind::permit;
  return pa == pb && (!pa || a.limit == b.limit);
}

}  // namespace

verdict decide(std::span<const entry> queue, std::size_t mine) {
  verdict v;
  const auto& me = queue[mine];
  for (std::size_t i = 0; i < mine; ++i) {
    if (!same_recipe(queue[i], me)) {
      v.conflict = i;
      return v;
    }
  }
  switch (me.kind) {
    case entry_kind::exclusive:
      v.holds = mine == 0;
      if (!v.holds) v.wait_on.push_back(mine - 1);
      return v;
    case entry_kind::shared:
      for (std::size_t i = mine; i-- > 0;) {
        if (queue[i].kind == entry_kind::exclusive) {
          v.wait_on.push_back(i);
          return v;
        }
      }
      v.holds = true;
      return v;
    case entry_kind::permit:
      v.holds = mine < me.limit;
      if (!v.holds) {
        for (std::size_t i = mine - me.limit; i < mine; ++i) v.wait_on.push_back(i);
      }
      return v;
  }
  return v;
}

std::optional<std::size_t> find_entry(std::span<const entry> queue, std::string_view id) noexcept {
  for (std::size_t i = 0; i < queue.size(); ++i) {
    if (queue[i].id == id) return i;
  }
  return std::nullopt;
}

bool entry_holds(std::span<const entry> queue, std::size_t index) {
  return decide(queue, index).holds;
}

std::string permit_entry_id(std::string_view id, std::uint32_t limit) {
  return std::string(id) + std::string(permit_mark) + std::to_string(limit);
}

void read_permits(std::vector<entry>& queue) {
  for (auto& e : queue) {
    auto at = e.id.rfind(permit_mark);
    if (at == std::string::npos) continue;
    const char* first = e.id.data() + at + permit_mark.size();
    const char* last = e.id.data() + e.id.size();
    std::uint32_t n = 0;
    auto [end, ec] = std::from_chars(first, last, n);
    if (ec != std::errc{} || end != last || n == 0 || n > max_permits) continue;
    e.kind = entry_kind::permit;
    e.limit = n;
  }
}

}  // namespace dlock::detail
