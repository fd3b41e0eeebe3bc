#pragma once
// The znodes of one dlock session's locks (zk_backend.cpp is the backend_session over them):
// the container node of each lock and this session's EPHEMERAL_SEQUENTIAL children under it,
// created with Curator's protected-mode prefix (so a create whose reply was lost is found and
// adopted), read back as a queue, and deleted. Requests go through one connection and are
// remembered in one session_cache. Not thread-safe by itself: the connection serialises
// requests, and the cache is the session's.

#include <zookeeper/zookeeper.h>

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "backends/zookeeper/zk_cache.hpp"
#include "backends/zookeeper/zk_connection.hpp"
#include "backends/zookeeper/zk_fetch.hpp"
#include "core/backend.hpp"

namespace dlock::detail::zk {

class lock_nodes {
 public:
  // Locks live under `base` ("<chroot>/dlock"); `secure`: read for anyone, all for the
  // creator's auth ids (else open ACLs); `owner` is written into each entry's data.
  lock_nodes(std::unique_ptr<connection> c, std::string base, bool secure, std::string owner);
  lock_nodes(const lock_nodes&) = delete;  // acl_ points into this object
  lock_nodes& operator=(const lock_nodes&) = delete;

  connection& conn() { return *conn_; }
  session_cache& cache() { return cache_; }
  const std::string& base() const { return base_; }

  // The container node of `lock`.
  std::string lock_path(std::string_view lock) const;
  // A deadline for requests without one of their own (see the definition).
  steady::time_point backstop() const;

  // Deletes this session's node of entry `id` under `lp` (found by its prefix if a create's
  // reply was lost); lock_lost when it is not there. `until`: bounded (asynchronous) calls.
  result<void> remove_entry(const std::string& lp, const std::string& id,
                            std::optional<steady::time_point> until);
  // The children of `path` (none if it does not exist).
  result<std::vector<std::string>> get_children(const std::string& path);
  result<std::vector<std::string>> get_children_until(const std::string& path,
                                                      steady::time_point deadline);
  // The data and stat of each of `paths`, pipelined in one round trip.
  result<std::vector<node_read>> fetch(const std::vector<std::string>& paths);
  // Adopts this session's node of entry `id` under `lp`, if a lost create made one.
  result<bool> adopt(const std::string& lp, const std::string& id);
  // Creates the node of entry `id` (`mutex`: named as Curator's InterProcessMutex names it).
  result<void> create_entry(const std::string& lp, entry_kind kind, bool mutex,
                            const std::string& id);
  // The lock's container node, and the persistent nodes above it when missing.
  result<void> ensure_parent(const std::string& lp);
  // The queue under `lp`; !all_tokens (enqueue's hot path) reads no unseen entry's metadata.
  result<queue_view> read_queue(const std::string& lp, bool all_tokens);

  // A set_value failure: the entry gone, or its session's lease ended, is lock_lost.
  failure value_failure(int rc, const std::string& path, const std::string& id);
  static failure value_failure(failure f, const std::string& id);

 private:
  std::unique_ptr<connection> conn_;
  const std::string base_;  // "<chroot>/dlock"
  const std::string owner_;
  struct ACL secure_acl_[2]{};
  struct ACL_vector acl_ {};  // a lock's container and its entries
  // The persistent nodes above the containers (the chroot, `dlock`): anyone may also create
  // under them, or the first identity to make them would own every lock name there.
  struct ACL parent_secure_acl_[2]{};
  struct ACL_vector parent_acl_ {};
  session_cache cache_;
};

}  // namespace dlock::detail::zk
