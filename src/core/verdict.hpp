#pragma once
// The recipes as pure decisions over a snapshot of a lock's queue (no I/O, no time): "does
// this entry hold, and if not, which entries must it wait for". Unit-tested exhaustively.
//
// Sources: the ZooKeeper recipes (Locks; Shared Locks), Curator's LockInternalsDriver, and
// for permits the counting semaphore over the same ordered queue.
//  - exclusive entry: holds when first; waits on its immediate predecessor.
//  - shared entry: holds when no exclusive entry precedes it; waits on the last exclusive
//    entry before it (never on a later writer, never on other readers).
//  - permit entry of a semaphore with limit N: holds when fewer than N entries precede it
//    (FIFO). Otherwise it waits on the N entries just ahead of it: the entry N places ahead
//    is what keeps it out, and that changes exactly when one of those N leaves. So a release
//    wakes at most N waiters, however many wait (Curator's InterProcessSemaphoreV2 wakes all).
//  - candidate entry of an election: an exclusive entry; the leader is the head (ZooKeeper's
//    leader election recipe; etcd's concurrency.Election: the oldest key leads, each other
//    candidate waits for the deletion of the one just before it).
//  A holder the backend could not list (queue_view::unlisted) counts where it stands, as a
//  holder of the deciding entry's own recipe (its kind only tells a reader whether it may
//  pass); an entry it keeps out waits for the queue to change, as it has no id to wait on.
//  A queue mixes recipes only by mistake (a mutex and a semaphore of one name, or two limits):
//  the entry that finds a different recipe or limit ahead of it is refused, naming it.

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/backend.hpp"

namespace dlock::detail {

struct verdict {
  bool holds{false};
  // When !holds, what may change the answer: the entries [wait_first, wait_first + wait_count)
  // ahead, any of them leaving (always a contiguous run: one entry for the locks, N for a
  // permit); or, with wait_change (and wait_count 0), any change of the queue, because an
  // unlisted holder is among what keeps it out (backend_session::wait_change).
  std::size_t wait_first{0};
  std::size_t wait_count{0};
  bool wait_change{false};
  // An entry ahead that belongs to another recipe or limit: the deciding entry is refused.
  std::optional<std::size_t> conflict;
};

// `mine` is the index of the deciding entry in `queue`, a queue with every entry listed.
verdict decide(std::span<const entry> queue, std::size_t mine);
// The same over a backend's view, counting its unlisted holders: `mine` indexes view.entries.
verdict decide(const queue_view& view, std::size_t mine);

// What the verdict of an entry reads of its queue: the first `head` entries and the `ahead`
// entries just before it (ahead == 0: every entry back to the last exclusive one, however far:
// a shared entry's). A backend that lists only those, with a gap between, saves reading the
// whole queue for every waiter (etcd); window_suffices tells whether a read fell short.
struct verdict_reads {
  std::size_t head{1};
  std::size_t ahead{1};
};
// `e` as read_recipes marked it (kind and limit).
verdict_reads reads_of(const entry& e) noexcept;

// Whether `view` decides entry `mine` as the whole queue would, when it holds the queue's
// first entries up to `gap_at`, then (after an unknown gap) a run of consecutive entries
// through `mine`. No gap (nullopt): the queue's whole prefix, always enough.
bool window_suffices(std::span<const entry> view, std::size_t mine,
                     std::optional<std::size_t> gap_at);

// Index of the entry with id `id`, if present.
std::optional<std::size_t> find_entry(std::span<const entry> queue, std::string_view id) noexcept;

// Whether the entry at `index` currently holds (used by status tools).
bool entry_holds(std::span<const entry> queue, std::size_t index);
bool entry_holds(const queue_view& view, std::size_t index);
// Whether view.unlisted[k] holds where it stands (status tools show it as a holder or not).
bool unlisted_holds(const queue_view& view, std::size_t k);

// The most permits a semaphore may have: a waiter waits on this many entries at most.
inline constexpr std::uint32_t max_permits = 1000;

// A permit entry keeps its semaphore's limit in its id ("<id>~p<N>"), so every backend stores
// and lists it unchanged, and a client of another dlock version sees an exclusive entry (it
// waits behind all of them: never an overlap).
std::string permit_entry_id(std::string_view id, std::uint32_t limit);
// An election candidate's entry id ("<id>~e"): a client of an older dlock sees an exclusive
// entry, so it never holds the name as a lock beside a leader.
std::string candidate_entry_id(std::string_view id);
// Marks the permit entries (kind permit, their limit) and the candidates of a listed queue
// from their ids.
void read_recipes(std::vector<entry>& queue);

}  // namespace dlock::detail
