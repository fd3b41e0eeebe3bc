#pragma once
/// @file inspect.hpp
/// Read-only views of a backend's lock queues, for tools such as `dlock status`/`dlock list`.

#include <chrono>
#include <cstdint>
#include <dlock/session.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dlock {

/// One entry of a lock's queue: the holder(s) first, then waiters in arrival order.
struct queue_entry {
  bool holds{false};   ///< true for the holder (or each shared holder)
  bool shared{false};  ///< a reader of a shared_mutex
  /// The entry's fencing token; 0 when the backend does not know it (another connection's
  /// advisory lock), or for a waiter where capabilities().waiter_tokens is false (Redlock).
  std::uint64_t token{0};
  /// "host pid=N description" as recorded by the creating session; for another connection's
  /// lock in ?mode=advisory, what the server tells: "address:port connection 42, user u, advisory"
  std::string owner;
  std::optional<std::chrono::system_clock::time_point> since;  ///< when the entry was created
  std::optional<std::chrono::milliseconds> lease_left;         ///< where the backend knows it
  std::uint32_t permits{0};  ///< a semaphore's permit: the semaphore's limit N; else 0
  bool candidate{false};     ///< a candidate of an election (the holder is its leader)
};

/// The queue of lock `name`, holder(s) first. Empty when the lock is free. In ?mode=advisory
/// the server keeps no queue: other connections' holders and waiting dlock sessions come
/// from the server's lock tables, with token 0 (unknown). Thread-safe.
/// Throws dlock::system_error (invalid_argument, backend errors). On a session that has ended,
/// a backend that can still read answers; one that cannot throws session_expired (naming why
/// the session ended) or session_closed.
std::vector<queue_entry> inspect(const session& s, std::string_view name);

/// Breaks lock `name` for an operator (Redisson's forceUnlock; `dlock unlock NAME --force`):
/// ends the session of each holder, as the end of its lease would. Everything that session
/// holds or waits for goes with it, and its holder is told *lost* at its next renewal -- not
/// before others may be granted: only the fencing token keeps its late writes out.
/// Returns the holders whose sessions were ended, as inspect() showed them (empty: it was
/// free). Waiters are left in place. Thread-safe.
/// Throws dlock::system_error: unsupported where capabilities().ends_other_sessions is false
/// (a ZooKeeper session ends only by its own client or its timeout; in ?mode=advisory the lock
/// belongs to a server connection; memory://), invalid_argument (bad name, an observe-only
/// session, or a lock held by this very session: unlock it instead), backend errors.
std::vector<queue_entry> force_unlock(const session& s, std::string_view name);

/// Names of locks that have entries, starting with `prefix`, sorted. Thread-safe.
/// Throws dlock::system_error: unsupported in ?mode=advisory (the server keeps only a hash of
/// each name, so it cannot name other connections' locks), backend errors.
std::vector<std::string> list_locks(const session& s, std::string_view prefix = {});

}  // namespace dlock
