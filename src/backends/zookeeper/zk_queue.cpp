#include "backends/zookeeper/zk_queue.hpp"

#include <algorithm>

#include "backends/common/wire_time.hpp"

namespace dlock::detail::zk {

std::vector<queue_child> dlock_children(
    const std::vector<std::string>& names,
    const std::function<std::optional<child_meta>(const std::string&)>& cached) {
  std::vector<queue_child> items;
  for (const auto& n : names) {
    auto c = parse_child(n);
    if (!c) continue;  // not a dlock entry
    items.push_back({std::move(*c), n, cached(n)});
  }
  return items;
}

queue_view children_to_queue(std::vector<queue_child> items) {
  std::erase_if(items, [](const queue_child& p) { return !p.meta.has_value(); });
  std::sort(items.begin(), items.end(),
            [](const queue_child& a, const queue_child& b) { return a.c.seq < b.c.seq; });
  queue_view v;
  for (auto& p : items) {
    entry e;
    e.id = std::move(p.c.entry_id);
    e.kind = p.c.kind;
    e.token = static_cast<std::uint64_t>(p.meta->czxid);
    e.owner = std::move(p.meta->owner);
    // czxid 0: a node whose metadata was not read (see read_queue's all_tokens).
    if (p.meta->czxid != 0) e.since = unix_ms_time(p.meta->ctime_ms);
    v.entries.push_back(std::move(e));
  }
  return v;
}

}  // namespace dlock::detail::zk
