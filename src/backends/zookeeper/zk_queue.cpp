#include "backends/zookeeper/zk_queue.hpp"

#include <algorithm>

#include "backends/common/wire_time.hpp"
#include "core/verdict.hpp"

namespace dlock::detail::zk {
namespace {

// Sequence order, as Curator and kazoo sort; children without a sequence (all at the lowest)
// by name, so that every dlock sees one order.
bool queue_order(const queue_child& a, const queue_child& b) {
  return a.c.seq != b.c.seq ? a.c.seq < b.c.seq : a.name < b.name;
}

}  // namespace

std::vector<queue_child> dlock_children(
    const std::vector<std::string>& names,
    const std::function<std::optional<child_meta>(const std::string&)>& cached) {
  std::vector<queue_child> items;
  // Every child is a contender (zk_names.hpp): one dlock does not know is exclusive.
  for (const auto& n : names) items.push_back({parse_child(n), n, cached(n), {}, 0});
  return items;
}

queue_view children_to_queue(std::vector<queue_child> items) {
  std::erase_if(items, [](const queue_child& p) { return !p.meta.has_value(); });
  std::sort(items.begin(), items.end(), queue_order);
  queue_view v;
  for (auto& p : items) {
    entry e;
    e.id = std::move(p.c.entry_id);
    e.kind = p.c.kind;
    e.token = static_cast<std::uint64_t>(p.meta->czxid);
    e.owner = std::move(p.meta->owner);
    // czxid 0: a node whose metadata was not read (see read_queue's all_tokens).
    if (p.meta->czxid != 0) e.since = unix_ms_time(p.meta->ctime_ms);
    e.value = std::move(p.value);
    e.version = p.version;
    v.entries.push_back(std::move(e));
  }
  return v;
}

std::optional<std::size_t> head_candidate(const std::vector<queue_child>& items) {
  if (items.empty()) return std::nullopt;
  auto head = std::min_element(items.begin(), items.end(), queue_order);
  // The engine's own mark (verdict.hpp), so both read one id alike.
  static const auto mark = candidate_entry_id("");
  if (!head->c.entry_id.ends_with(mark)) return std::nullopt;
  return static_cast<std::size_t>(head - items.begin());
}

std::vector<entry> compared_entries(const std::vector<std::string>& names,
                                    std::uint64_t head_version) {
  // Tokens and owners are not compared: no metadata needed, so every child stays in.
  auto items = dlock_children(names, [](const std::string&) { return child_meta{}; });
  if (auto head = head_candidate(items)) items[*head].version = head_version;
  return children_to_queue(std::move(items)).entries;
}

}  // namespace dlock::detail::zk
