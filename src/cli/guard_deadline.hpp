#pragma once
// The lease's end as dlock knows it, shared with the guard (supervise.hpp), so that the guard
// can stop CMD's group when the lease lapses while dlock is frozen (SIGSTOP, a debugger, a
// stalled cgroup): dlock's renewals and its own loss check stop with it, but the server grants
// the lock on regardless.
//
// It is a page both processes map (created before the fork), not a pipe: the guard only ever
// wants the latest deadline, which a full pipe behind a stopped or slow guard would withhold,
// and dlock never blocks or meets SIGPIPE writing a word of memory.

#include <atomic>
#include <chrono>
#include <cstdint>

namespace dlock::cli {

// Who sent CMD's group SIGTERM for a lost lease. Exactly one of the two does: a CMD that
// takes a second SIGTERM as "quit at once" must not get one.
enum class loss_enforcer : int { none, dlock, guard };

class guard_deadline {
 public:
  using time_point = std::chrono::steady_clock::time_point;

  // Throws cli_error (exit 69) if the page cannot be mapped.
  explicit guard_deadline(time_point valid_until);
  ~guard_deadline();
  guard_deadline(const guard_deadline&) = delete;
  guard_deadline& operator=(const guard_deadline&) = delete;

  // dlock: the hold's valid_until(), after any renewal. The guard may read it at any time, so
  // it is the library's own deadline, never a later guess.
  void extend(time_point valid_until) noexcept;
  time_point valid_until() const noexcept;

  // True for the first caller only: that one signals the group.
  bool claim_loss(loss_enforcer who) noexcept;
  loss_enforcer enforcer() const noexcept;

 private:
  struct shared {
    std::atomic<std::int64_t> valid_until;  // steady_clock (CLOCK_MONOTONIC) ticks
    std::atomic<int> enforcer;
  };
  // Across processes, atomics are only atomic when they need no lock.
  static_assert(std::atomic<std::int64_t>::is_always_lock_free);
  static_assert(std::atomic<int>::is_always_lock_free);
  shared* s_;
};

}  // namespace dlock::cli
