#pragma once
// Each renewal's check that the session's keys are still its own. A key deleted or replaced by
// another client (etcdctl del, a clean-up) let the next contender in while its holder still
// held; ending the session tells its holders at this renewal rather than at their release.

#include <chrono>

#include "backends/etcd/etcd_client.hpp"
#include "backends/etcd/etcd_entries.hpp"
#include "core/result.hpp"

namespace dlock::detail::etcd {

// Checks, in one read-only Txn per 64 keys (etcd allows 128 operations in one), that every
// live key of `own` is stored with the create revision it was given. session_expired names
// the first that is not; a key this session began to delete meanwhile is no news. Given up at
// `deadline` with the client's error (backend_unavailable), which is no news either.
result<void> own_keys_kept(client& c, own_entries& own,
                           std::chrono::steady_clock::time_point deadline);

}  // namespace dlock::detail::etcd
