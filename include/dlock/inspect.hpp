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
  bool holds{false};       ///< true for the holder (or each shared holder)
  bool shared{false};      ///< a reader of a shared_mutex
  std::uint64_t token{0};  ///< the entry's fencing token
  std::string owner;       ///< "host pid=N description" as recorded by the creating session
  std::optional<std::chrono::system_clock::time_point> since;  ///< when the entry was created
  std::optional<std::chrono::milliseconds> lease_left;         ///< where the backend knows it
};

/// The queue of lock `name`, holder(s) first. Empty when the lock is free.
/// Throws dlock::system_error (invalid_argument, backend errors).
std::vector<queue_entry> inspect(const session& s, std::string_view name);

/// Names of locks that have entries, starting with `prefix`, sorted.
std::vector<std::string> list_locks(const session& s, std::string_view prefix = {});

}  // namespace dlock
