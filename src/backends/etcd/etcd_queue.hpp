#pragma once
// A lock's queue as read from etcd: the reads one Txn makes, and the queue_view built from
// their answers. Either the whole queue (list) or a waiter's window -- the queue's first
// entries and the few just ahead of the waiter, what its verdict reads (verdict_reads) -- so
// that queueing the N-th waiter, or waking one, reads O(1) keys, not N (Go's Mutex reads only
// the key created just before its own: WithLastCreate, WithMaxCreateRev).

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "backends/etcd/etcd_client.hpp"
#include "core/verdict.hpp"

namespace dlock::detail::etcd {

// A lock's two ranges: its contender keys (Go's) and dlock's candidates' companions.
struct lock_ranges {
  std::string prefix, end, meta, meta_end;
  lock_ranges(std::string_view base, std::string_view lock);

  // Both ranges whole, oldest first: whole_view's input.
  std::vector<txn_op> reads() const;
  // A window (window_view's input): of the contender keys, the `head` oldest and the
  // `ahead` + 1 newest, none created after `upto` (0: no bound; else the waiter's own create
  // revision, so that the newest is the waiter's own key). A candidate's companions are read
  // by key afterwards (etcd_backend.cpp: with_companions).
  std::vector<txn_op> window_reads(std::size_t head, std::size_t ahead, std::int64_t upto) const;
  // The `need.head` oldest contender keys: with the reader's own key among them, the whole
  // queue up to it.
  txn_op head_read(verdict_reads need) const;
  // The window the verdict of an entry reads (a shared entry's: a page first).
  std::vector<txn_op> window_reads(verdict_reads need, std::int64_t upto) const;
};

// What the verdict of an entry of `kind` with id `entry_id` reads (a permit's or a
// candidate's kind is in its id: verdict.hpp).
verdict_reads reads_for(entry_kind kind, std::string_view entry_id);

// A listed entry's key, for waiting on it; `head`: it was first in the queue when listed,
// which it stays until it leaves (entries only join behind).
struct listed_key_of {
  std::string id;
  watched_key key;
  bool head{false};
};

struct read_view {
  queue_view q;
  std::vector<listed_key_of> keys;
  // Where the gap of a window lies (verdict.hpp: window_suffices); nullopt: the whole prefix.
  std::optional<std::size_t> gap_at;
};

// The whole queue from reads()'s two answers, in create-revision order.
read_view whole_view(const lock_ranges& r, const range_result& keys, const range_result& metas);

// The window from window_reads()'s answers (two pages of keys, then two of companions if they
// were read); nullopt if a key that needs a companion has none in reach of the companions read
// (a companion left behind by a key an operator deleted): the caller lists the whole queue
// instead. Without the companions' pages, a dlock candidate reads as another client's: still a
// candidate, only its id and owner unknown.
std::optional<read_view> window_view(const lock_ranges& r, std::span<const range_result> pages);

// A candidate's window: window_reads()'s two pages of keys, followed by two (equal) pages of
// the companions of the dlock candidates among them, read by key in a second Txn on `c` (the
// reader's own, `own_key`'s, it knows). Not two more sorted ranges: etcd sorts a whole range
// before it applies a limit, so each would cost the member O(N) keys, and 1000 candidates
// queueing at once overloaded it. A companion gone by the second read (its candidate left)
// makes that key read as another client's: the verdict's wait on it ends at once, the key
// being gone too.
result<std::vector<range_result>> with_companions(client& c, const lock_ranges& r,
                                                  std::vector<range_result> pages,
                                                  std::string_view own_key,
                                                  std::string_view own_meta_key,
                                                  std::string_view own_record);

// The names of the locks with a contender key among `kvs` (keys under `base`), sorted once each.
std::vector<std::string> lock_names_of(std::string_view base, std::span<const key_value> kvs);

// The keys of the entries listings saw, per lock, for waiting on them: merged, so that the
// waiters of one lock (threads of one session) keep each other's. A miss only costs a
// spurious wake-up (the engine lists again), so it is bounded crudely. Thread-safe.
class seen_keys {
 public:
  void remember(std::string_view lock, const std::vector<listed_key_of>& keys);
  std::optional<listed_key_of> find(std::string_view lock, const std::string& id);
  // An entry seen deleted: forgotten. Whether any listing ever saw it at the head (even one
  // made while its waiter watched).
  bool forget(std::string_view lock, const std::string& id);

 private:
  std::mutex mu_;
  std::map<std::string, std::map<std::string, listed_key_of>, std::less<>> keys_;
  std::size_t count_{0};
};

}  // namespace dlock::detail::etcd
