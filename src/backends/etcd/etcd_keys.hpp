#pragma once
// The key layout of etcd's own lock recipe (Go's client/v3/concurrency Mutex, `etcdctl lock`):
// a lock NAME under the URL's prefix P is the set of keys "P/NAME/<lease id in lowercase hex>",
// one per lease, each bound to its lease; the lowest create revision holds, every other
// contender waits for the deletion of the key created just before its own. dlock writes its
// entries there, so dlock and every client of that recipe exclude each other.
//
// What Go writes as the value is empty; dlock writes a small record (entry_value) naming its
// entry, so another dlock can tell a shared (reader) entry or a permit from a mutex's. A key
// whose value is not such a record (Go's, etcdctl's) is an exclusive entry: a client that
// knows only the mutex is never taken for a reader, and dlock's readers look exclusive to it.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/backend.hpp"

namespace dlock::detail::etcd {

// "P/NAME/" (or "NAME/" without a prefix): the prefix of a lock's keys, as Go's Mutex forms it.
std::string lock_prefix(std::string_view base, std::string_view lock);
// The key of lease `lease` in a lock: lock_prefix + the lease id in lowercase hex (Go's %x).
std::string lease_key(std::string_view lock_prefix, std::int64_t lease);
// The end of the range of keys starting with `prefix` (etcd's GetPrefixRangeEnd); "\0" (every
// key) for an empty prefix.
std::string prefix_range_end(std::string_view prefix);

// The value dlock stores in its entry's key.
std::string entry_value(entry_kind kind, std::string_view entry_id, std::string_view owner);

// An entry read back from one key of a lock's range. `suffix` is the key after the lock's
// prefix. nullopt for a key of a nested name ("P/NAME/x/y": lock "NAME/x"'s, not ours).
std::optional<entry> read_entry(std::string_view suffix, std::string_view value,
                                std::int64_t create_revision);

// The lock name of a key under `base` ("P/"), if it is an entry's key ("P/NAME/<hex>").
std::optional<std::string> lock_of_key(std::string_view base, std::string_view key);

}  // namespace dlock::detail::etcd
