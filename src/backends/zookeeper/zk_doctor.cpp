#include "backends/zookeeper/zk_doctor.hpp"

#include <string>

namespace dlock::detail::zk {

std::vector<check_finding> findings(std::chrono::milliseconds requested,
                                    std::chrono::milliseconds negotiated) {
  std::vector<check_finding> out;
  check_finding timeout{.check = "session-timeout",
                        .value = std::to_string(negotiated.count()) + " ms granted, " +
                                 std::to_string(requested.count()) + " ms asked"};
  if (negotiated == requested) {
    timeout.reason = "the ensemble granted the session timeout asked for";
  } else {
    // The server clamps to [2, 20] ticks; the lease in force is the granted one.
    timeout.status = check_status::weakened;
    timeout.reason =
        negotiated < requested
            ? "the ensemble shortened the session timeout (minSessionTimeout/maxSessionTimeout): "
              "a pause shorter than asked already loses the locks"
            : "the ensemble lengthened the session timeout (minSessionTimeout): a dead holder "
              "keeps its locks that much longer";
  }
  out.push_back(std::move(timeout));
  out.push_back({.check = "quorum",
                 .guarantee = "failover",
                 .reason = "a write is on a majority of the ensemble before it is answered: a "
                           "leader change loses no lock node and no token (the czxid)"});
  out.push_back({.check = "layout",
                 .guarantee = "interop",
                 .reason = "Curator's lock recipes, and kazoo's given extra_lock_patterns, see "
                           "the same nodes; kazoo's Election does not "
                           "(docs/zookeeper.md#interop-kazoo-curator)"});
  return out;
}

}  // namespace dlock::detail::zk
