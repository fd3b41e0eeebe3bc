#pragma once
// etcd://host1:2379,host2:2379[/prefix]?ttl=10s -- etcd's v3 API over gRPC (docs/etcd.md).
// The session is an etcd lease; an entry is a key bound to it in the layout of etcd's own lock
// recipe (etcd_keys.hpp), so dlock, `etcdctl lock` and Go's concurrency.Mutex exclude each
// other; the fencing token is the key's create revision.

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "core/backend.hpp"
#include "core/url.hpp"

namespace dlock::detail {

result<std::unique_ptr<backend_session>> open_etcd(const url& u, const session_info& info);

// Test hook: the leases of the etcd session behind a dlock session's backend (the first is
// the session's own; more are granted when one session holds several entries of one lock),
// or nullopt if it is not etcd.
std::optional<std::vector<std::int64_t>> etcd_leases(backend_session& b);

}  // namespace dlock::detail
