#pragma once
// zk://[user:password@]host1:2181,host2:2181/chroot?session_timeout=10s&connect_timeout=5s
// -- ZooKeeper through the libzookeeper-mt C client. The ZooKeeper session is the lease.
//
//  - session_timeout: the session timeout asked for (default: the session's ttl); the server
//    clamps it to [minSessionTimeout, maxSessionTimeout] and the granted value is the TTL.
//  - connect_timeout: how long opening waits for a session (default: request_timeout; at
//    most what is left of session::open's open_timeout).
//  - /chroot: locks live under <chroot>/dlock (created on demand).
//  - mutex_names=writer: a mutex's nodes named as a writer's ("__WRIT__"), as dlock did before,
//    for a rolling upgrade from an older dlock; default curator ("-lock-", Curator's
//    InterProcessMutex).
//  - user:password: digest credentials; nodes are then created world-readable, with all
//    rights for the creator's identity only. ZooKeeper checks a delete against the parent's
//    ACL, so clients sharing a lock name must share the identity that created its node.
//  - DLOCK_ZK_DEBUG (environment): let the C client's log through to stderr.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "core/backend.hpp"
#include "core/url.hpp"

namespace dlock::detail {

result<std::unique_ptr<backend_session>> open_zookeeper(const url& u, const session_info& info);

namespace zk {

// A ZooKeeper session's id and password, as zoo_client_id reports them.
struct client_identity {
  std::int64_t session_id{0};
  std::string password;  // 16 raw bytes
};

// Requests a ZooKeeper session has sent, by kind: what a lock or an election costs. (Removing
// watches at close is not counted.)
struct request_counts {
  std::uint64_t create{0}, get_children{0}, get_data{0}, set_data{0}, remove{0}, exists{0};
};

}  // namespace zk

// Test hooks.
// The ZooKeeper session behind a dlock session's backend, or nullopt if it is not ZooKeeper.
// (A second handle opened with it and then closed expires the session from the server side.)
std::optional<zk::client_identity> zookeeper_identity(backend_session& b);
// The requests sent so far by the ZooKeeper session behind a dlock session's backend, or
// nullopt if it is not ZooKeeper.
std::optional<zk::request_counts> zookeeper_requests(backend_session& b);

}  // namespace dlock::detail
