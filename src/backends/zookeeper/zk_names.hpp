#pragma once
// How dlock's lock names and queue entries map onto znode names, and how a lock node's
// children -- dlock's and other clients' -- read as queue entries.
//
// A lock is the container node <base>/<escaped name>; each dlock entry is an
// EPHEMERAL_SEQUENTIAL child named after Curator's recipes: "_c_<entry id>-lock-<seq>" for a
// mutex (InterProcessMutex), "_c_<entry id>-__WRIT__<seq>" for a shared_mutex writer, a
// permit or an election's candidate, "_c_<entry id>-__READ__<seq>" for a reader
// (InterProcessReadWriteLock). The "_c_" + entry id prefix is Curator's protected-mode
// convention (a create whose reply was lost is found again by its prefix).
//
// Every other child is a contender too, so that no client dlock does not know can hold beside
// a dlock holder: kazoo's "<uuid>__lock__<seq>" is exclusive and "<uuid>__rlock__<seq>"
// shared; anything else is exclusive, ordered by its last 10 characters when they are a
// sequence number, and ahead of every entry when they are not (it blocks the lock until it is
// deleted: a stray node there is an operator's to remove, never one to ignore).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/backend.hpp"

namespace dlock::detail::zk {

// One znode name component for a lock name: reversible, and free of what ZooKeeper refuses
// in a path component ('/', control and C1 characters, surrogates, code points above
// U+F8FF that Java's path check rejects, "." and ".."). Escapes are "%XX" of the UTF-8 bytes.
std::string escape_lock_name(std::string_view name);
// The inverse; nullopt for a component escape_lock_name cannot have produced.
std::optional<std::string> unescape_lock_name(std::string_view component);

// The name of entry `entry_id` before ZooKeeper appends the 10-digit sequence: "__READ__"
// for shared, "-lock-" for a mutex's exclusive entry, "__WRIT__" for every other exclusive one.
std::string child_prefix(std::string_view entry_id, entry_kind kind, bool mutex = false);
// "_c_<entry id>-": what every child of a dlock entry starts with, whatever its kind.
std::string entry_prefix(std::string_view entry_id);

struct child_name {
  std::string entry_id;
  entry_kind kind{entry_kind::exclusive};
  std::int64_t seq{0};
  bool foreign{false};  // not in dlock's (and Curator's) "_c_<id>-<marker><seq>" form
};
// Reads any child's name as a queue entry. A foreign child's entry id is its whole name
// followed by '/', which no dlock id contains and no recipe mark (verdict.hpp) ends with.
child_name parse_child(std::string_view name);

// What the name of the child that stands for entry `entry_id` starts with: entry_prefix() for
// a dlock id, the name itself for a foreign child's id.
std::string node_prefix(std::string_view entry_id);

}  // namespace dlock::detail::zk
