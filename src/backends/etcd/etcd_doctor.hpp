#pragma once
// `dlock doctor` for etcd: what Raft and the key layout give, whatever the cluster's settings
// (a cluster started with --unsafe-no-fsync cannot be told from a client and is not judged).

#include <cstddef>
#include <vector>

#include "core/backend.hpp"

namespace dlock::detail::etcd {

// `members` is how many members the URL names.
std::vector<check_finding> findings(std::size_t members);

}  // namespace dlock::detail::etcd
