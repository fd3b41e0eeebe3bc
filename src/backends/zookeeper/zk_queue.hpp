#pragma once
// From a lock node's children to its queue: which children are dlock entries, and the entries
// in sequence order with the token (czxid), creation time and owner of each node. Pure; the
// reads that fill in unknown nodes are the session's (zk_backend.cpp).

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "backends/zookeeper/zk_cache.hpp"
#include "backends/zookeeper/zk_names.hpp"
#include "core/backend.hpp"

namespace dlock::detail::zk {

struct queue_child {
  child_name c;
  std::string name;                // the znode's name under the lock node
  std::optional<child_meta> meta;  // nullopt until read
};

// dlock's entries among `names` (other children are skipped), each with what `cached` knows.
std::vector<queue_child> dlock_children(
    const std::vector<std::string>& names,
    const std::function<std::optional<child_meta>(const std::string&)>& cached);

// The queue of the children whose meta is known (the others were deleted before they could
// be read), in sequence order.
queue_view children_to_queue(std::vector<queue_child> items);

}  // namespace dlock::detail::zk
