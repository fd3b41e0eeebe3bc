#pragma once
/// @file mutex.hpp
/// dlock::mutex: a non-reentrant distributed exclusive lock meeting the standard
/// TimedLockable requirements, so std::lock_guard, std::unique_lock and std::scoped_lock
/// work with it. Several locks at once: dlock::multi_lock (multi_lock.hpp), or take them in one
/// fixed order. std::scoped_lock and std::lock of two or more try one, back off and try
/// again, which between contending threads can go on in lockstep for minutes where each try
/// is a round trip (a tester's 8 threads on ZooKeeper: 5 of 24 in 60 s).

#include <dlock/basic_lock.hpp>

namespace dlock {

/// A distributed mutex named `name` on `session`'s backend. Fair: waiters are granted in
/// arrival order. Every grant carries a fencing token (see hold.hpp).
///
/// Lock names: 1 to 255 bytes of UTF-8 without control characters (C0, C1, bidirectional
/// formatting); the constructor throws invalid_argument otherwise. Calling lock() on a handle
/// that already holds throws already_held (it would deadlock with itself); use recursive_mutex
/// for re-entry.
///
/// Example:
/// @code
///   auto s = dlock::session::open("sqlite:///tmp/locks.db");
///   dlock::mutex m(s, "billing/nightly");
///   std::unique_lock lk(m, std::chrono::seconds(5));   // try_lock_for
///   if (lk) write_with_token(m.token());
/// @endcode
class mutex : public detail::basic_lock {
 public:
  mutex(dlock::session s, std::string_view name);
};

}  // namespace dlock
