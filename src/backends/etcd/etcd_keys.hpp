#pragma once
// The key layout of etcd's own lock recipe (Go's client/v3/concurrency Mutex, `etcdctl lock`):
// a lock NAME under the URL's prefix P is the set of keys "P/NAME/<lease id in lowercase hex>",
// one per lease, each bound to its lease; the lowest create revision holds, every other
// contender waits for the deletion of the key created just before its own. dlock writes its
// entries there, so dlock and every client of that recipe exclude each other.
//
// The contender's key holds what Go's recipes leave free: a lock's entry (mutex, reader,
// permit) keeps dlock's record -- its id, reader or not, its owner -- as the key's value, which
// Go's Mutex never reads. An election's candidate cannot: its value is the leader's value, as
// in concurrency.Election, so its record lives in a companion key outside the lock's range,
// "P/NAME\0dlock/<lease hex>", bound to the same lease, written and deleted in the same Txn as
// the candidate's key (Go, which ranges over "P/NAME/", never sees it). A contender with
// neither is another client's: exclusive (a Go Mutex's key, empty), or a candidate when it
// carries a value (a Go Election's). So a client that knows only the mutex is never taken for
// a reader, and dlock's readers look exclusive to it.

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

// "P/NAME\0dlock/": the prefix of a lock's candidates' companion keys (no lock name holds a
// NUL).
std::string meta_prefix(std::string_view base, std::string_view lock);

// The record dlock stores in an entry's key (a candidate's: in its companion key).
std::string entry_record(entry_kind kind, std::string_view entry_id, std::string_view owner);

// Whether a key's value is a dlock record (a lock entry's), so the key needs no companion.
bool holds_record(std::string_view value);

// A contender's key as listed, and its companion's record if it has one.
struct listed_key {
  std::string_view suffix;  // the key after the lock's prefix: the lease in hex
  std::string_view value;
  std::int64_t create_revision{0};
  std::int64_t version{0};
  const std::string* record{nullptr};  // the companion's, if one was read
};

// The entry of one contender key. nullopt for a key of a nested name ("P/NAME/x/y": lock
// "NAME/x"'s, not this one's).
std::optional<entry> read_entry(const listed_key& k);

// The lock name of a key under `base` ("P/"), if it is shaped as a contender's key
// ("P/NAME/<hex>"; not a companion key).
std::optional<std::string> lock_of_key(std::string_view base, std::string_view key);

}  // namespace dlock::detail::etcd
