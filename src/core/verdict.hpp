#pragma once
// The lock recipes as pure decisions over a snapshot of a lock's queue (no I/O, no time):
// "do I hold it, and if not, which one entry do I wait for". Unit-tested exhaustively.
//
// Sources: the ZooKeeper recipes (Locks; Shared Locks), Curator's LockInternalsDriver.
//  - exclusive entry: holds when first; waits on its immediate predecessor.
//  - shared entry: holds when no exclusive entry precedes it; waits on the last exclusive
//    entry before it (never on a later writer, never on other readers).

#include <cstddef>
#include <optional>
#include <span>

#include "core/backend.hpp"

namespace dlock::detail {

struct verdict {
  bool holds{false};
  std::optional<std::size_t> wait_on;  // index into the queue when !holds
};

// `mine` is the index of the deciding entry in `queue`.
verdict decide(std::span<const entry> queue, std::size_t mine) noexcept;

// Index of the entry with id `id`, if present.
std::optional<std::size_t> find_entry(std::span<const entry> queue, std::string_view id) noexcept;

// Whether the entry at `index` currently holds (used by status tools).
bool entry_holds(std::span<const entry> queue, std::size_t index) noexcept;

}  // namespace dlock::detail
