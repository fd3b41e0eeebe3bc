#include "backends/etcd/etcd_doctor.hpp"

#include <string>

namespace dlock::detail::etcd {

std::vector<check_finding> findings(std::size_t members) {
  std::vector<check_finding> out;
  out.push_back(
      {.check = "raft",
       .guarantee = "failover",
       .reason = "a write is committed on a majority of the members before it is "
                 "answered: a leader change loses no key and no token (the create "
                 "revision)",
       .value = std::to_string(members) + (members == 1 ? " member" : " members") + " in the URL"});
  out.push_back({.check = "lease",
                 .guarantee = "exclusion",
                 .reason = "one holder at a time; a crashed holder's key goes with its lease, "
                           "when the TTL ends"});
  out.push_back({.check = "layout",
                 .guarantee = "interop",
                 .reason = "`etcdctl lock`, `etcdctl elect` and Go's concurrency.Mutex and "
                           "Election see the same keys (docs/etcd.md)"});
  return out;
}

}  // namespace dlock::detail::etcd
