#pragma once
// The writes on a session's own entries once they are queued: a release (Go's Unlock) and an
// election candidate's value (Go's Proclaim). Each checks the entry is this session's first.

#include <chrono>
#include <cstdint>
#include <string_view>

#include "backends/etcd/etcd_client.hpp"
#include "backends/etcd/etcd_entries.hpp"
#include "core/result.hpp"

namespace dlock::detail::etcd {

// Deletes entry `id`'s key (a candidate's: with its companion, if that still holds its
// record), waiting until `until` at most. lock_lost if it was gone already; a delete cut off
// leaves the lease's slot on the lock retired (own_entries::mark_unsure).
result<void> remove_own(client& c, own_entries& own, std::string_view lock, std::string_view id,
                        std::chrono::steady_clock::time_point until);

// Puts `value` on candidate `id`'s key, guarded by its create revision and its companion, and
// returns the new version. lock_lost if the entry is gone; unsupported if it is no candidate.
result<std::uint64_t> proclaim(client& c, own_entries& own, std::string_view lock,
                               std::string_view id, std::string_view value);

}  // namespace dlock::detail::etcd
