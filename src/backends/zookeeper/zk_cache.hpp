#pragma once
// What one ZooKeeper session remembers between requests, so that the uncontended cycle needs
// no reads beyond getChildren: the czxid, creation time and owner of every queue node seen
// (a node's are fixed for its life, so the cache is never stale, only incomplete; a value is
// not, so none is kept), the node of each of our own entries with the stat.version we last
// gave it, and the entries whose create had no reply. Thread-safe.

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace dlock::detail::zk {

struct child_meta {
  std::int64_t czxid{0};
  std::int64_t ctime_ms{0};
  std::string owner;
};

class session_cache {
 public:
  // `lock` is the lock node's path, `name` a child's name. Nothing for a child that was
  // recorded with czxid 0 (name seen, metadata not read).
  std::optional<child_meta> meta(const std::string& lock, const std::string& name) const;
  // The child of `lock` whose name starts with `prefix` (one entry's node), if seen.
  std::optional<std::string> child_with_prefix(const std::string& lock,
                                               const std::string& prefix) const;
  // Replaces what is known of `lock` by exactly its current children.
  void replace(const std::string& lock, std::vector<std::pair<std::string, child_meta>> present);

  // Our entry `id` is node `name` of `lock`, at stat.version `version`.
  void own(const std::string& id, const std::string& lock, const std::string& name, child_meta m,
           std::int32_t version = 0);
  // Path of our entry `id`'s node, if created and not yet removed.
  std::optional<std::string> own_path(const std::string& id) const;
  // The stat.version our entry `id`'s node had at our last write or read of it (set_value's
  // expected version); 0 if unknown.
  std::int32_t own_version(const std::string& id) const;
  void set_own_version(const std::string& id, std::int32_t version);
  // Forgets our entry `id` (removed, or never created).
  void disown(const std::string& id);
  // Our entry `id` is being deleted by us: from now on its node's absence is no news.
  void begin_removal(const std::string& id);
  // The nodes of our entries that should exist: created, and not being removed by us.
  std::vector<std::string> live_own_paths() const;

  // A create of entry `id` ended without a reply: it may or may not exist.
  void mark_uncertain(const std::string& id);
  bool uncertain(const std::string& id) const;

 private:
  void evict_if_full(const std::string& lock);

  mutable std::mutex mu_;
  struct own_node {
    std::string lock, name;
    std::int32_t version{0};
    bool removing{false};
  };
  std::map<std::string, std::map<std::string, child_meta>> children_;  // lock -> name -> meta
  std::map<std::string, own_node> own_;                                // id -> its node
  std::set<std::string> uncertain_;
};

}  // namespace dlock::detail::zk
