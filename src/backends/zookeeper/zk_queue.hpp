#pragma once
// From a lock node's children to its queue: every child as an entry (zk_names.hpp), and them
// in sequence order with the token (czxid), creation time and owner of each node, and the
// value and version of the head when it is an election's candidate. Pure; the reads that fill
// in unknown nodes are the session's (zk_backend.cpp).

#include <cstdint>
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
  std::string value;               // read only for the head candidate (head_candidate)
  std::uint64_t version{0};
};

// The entries `names` stand for (every child: one dlock did not create is a foreign
// contender), each with what `cached` knows.
std::vector<queue_child> dlock_children(
    const std::vector<std::string>& names,
    const std::function<std::optional<child_meta>(const std::string&)>& cached);

// The queue of the children whose meta is known (the others were deleted before they could
// be read), in sequence order.
queue_view children_to_queue(std::vector<queue_child> items);

// The item with the lowest sequence when it is an election's candidate (its id says so): the
// leader, the one entry whose value and version a listing reads. An election needs no other
// (each candidate waits on its predecessor's deletion, not its value), and reading every
// candidate's would cost each observer a request per candidate at every change.
std::optional<std::size_t> head_candidate(const std::vector<queue_child>& items);

// The queue that children `names`, with the head candidate at `head_version`, stand for as far
// as same_entries() compares (ids and versions): what wait_change() checks a caller's view
// against.
std::vector<entry> compared_entries(const std::vector<std::string>& names,
                                    std::uint64_t head_version);

}  // namespace dlock::detail::zk
