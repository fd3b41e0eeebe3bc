#include "core/verdict.hpp"

namespace dlock::detail {

verdict decide(std::span<const entry> queue, std::size_t mine) noexcept {
  if (queue[mine].kind == entry_kind::exclusive) {
    if (mine == 0) return {true, std::nullopt};
    return {false, mine - 1};
  }
  for (std::size_t i = mine; i-- > 0;) {
    if (queue[i].kind == entry_kind::exclusive) return {false, i};
  }
  return {true, std::nullopt};
}

std::optional<std::size_t> find_entry(std::span<const entry> queue, std::string_view id) noexcept {
  for (std::size_t i = 0; i < queue.size(); ++i) {
    if (queue[i].id == id) return i;
  }
  return std::nullopt;
}

bool entry_holds(std::span<const entry> queue, std::size_t index) noexcept {
  return decide(queue, index).holds;
}

}  // namespace dlock::detail
