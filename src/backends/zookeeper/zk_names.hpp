#pragma once
// How dlock's lock names and queue entries map onto znode names.
//
// A lock is the container node <base>/<escaped name>; each entry is an EPHEMERAL_SEQUENTIAL
// child named "_c_<entry id>-__WRIT__<seq>" or "_c_<entry id>-__READ__<seq>". The "_c_" +
// entry id prefix is Curator's protected-mode convention (a create whose reply was lost is
// found again by its prefix); the marker makes the kind visible to every client.

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

// The name of entry `entry_id` before ZooKeeper appends the 10-digit sequence.
std::string child_prefix(std::string_view entry_id, entry_kind kind);
// "_c_<entry id>-": what every child of this entry starts with, whatever its kind.
std::string entry_prefix(std::string_view entry_id);

struct child_name {
  std::string entry_id;
  entry_kind kind{entry_kind::exclusive};
  std::int64_t seq{0};
};
// Parses a child's name; nullopt for names dlock did not create.
std::optional<child_name> parse_child(std::string_view name);

}  // namespace dlock::detail::zk
