#pragma once
// `dlock doctor` for ZooKeeper: the session timeout the ensemble granted against the one
// asked for, and what the ensemble itself provides (a quorum; Curator's and kazoo's layout).

#include <chrono>
#include <dlock/doctor.hpp>
#include <vector>

namespace dlock::detail::zk {

std::vector<check_finding> findings(std::chrono::milliseconds requested,
                                    std::chrono::milliseconds negotiated);

}  // namespace dlock::detail::zk
