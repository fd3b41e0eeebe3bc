#pragma once
// The lock engine written once for every backend and recipe: join the queue, decide with
// verdict.hpp, wait only for the one entry that blocks us, and remove our entry on every
// exit that does not end holding (timeout, cancel, error).

#include <atomic>
#include <dlock/basic_lock.hpp>
#include <dlock/observer.hpp>
#include <memory>
#include <stop_token>
#include <string>
#include <string_view>
#include <thread>

#include "core/backend.hpp"

namespace dlock::detail {

class session_core;
class hold_core;

class lock_handle {
 public:
  // `permits` > 0: a semaphore's handle, whose acquires take one of that many permits.
  lock_handle(std::shared_ptr<session_core> s, std::string name, lock_type type,
              std::uint32_t permits = 0);
  ~lock_handle();

  // Acquires in `kind` mode; false with ec set when not granted. A candidate (an election's
  // campaign) sets `value` on its entry before it can be seen leading by its own caller.
  bool acquire(entry_kind kind, steady::time_point deadline, std::stop_token stop,
               std::error_code& ec, std::string* message = nullptr,
               std::string_view value = {}) noexcept;
  // Releases one level (recursive) or the whole hold.
  void release(std::error_code& ec) noexcept;

  bool holds() const noexcept { return hold_ != nullptr; }
  bool holds_shared() const noexcept { return hold_ && kind_ == entry_kind::shared; }
  std::size_t count() const noexcept { return count_; }
  // The handle moved: whichever thread re-enters next owns the hold from then on.
  void handed_over() noexcept { taken_by_ = std::thread::id{}; }
  const std::shared_ptr<hold_core>& current() const noexcept { return hold_; }
  const std::string& name() const noexcept { return name_; }
  const std::shared_ptr<session_core>& session() const noexcept { return session_; }
  lock_type type() const noexcept { return type_; }
  std::uint32_t permits() const noexcept { return permits_; }

 private:
  result<void> acquire_impl(entry_kind kind, steady::time_point deadline, std::stop_token stop,
                            std::string_view value);
  result<queue_view> wait_for_grant(const std::string& id, queue_view q,
                                    steady::time_point deadline, bool one_try,
                                    std::stop_token stop);
  result<void> check_recipe(entry_kind kind, std::string_view value) const;
  std::string what() const;  // "lock 'NAME'", "semaphore 'NAME'"..., for messages (by kind_)
  failure conflict_failure(const entry& mine, const entry& other) const;
  void abandon(const std::string& entry_id) noexcept;
  void woke(wakeup_kind kind) const noexcept;  // reports a wake-up to the observer

  // One per held lock, so its size is the engine's part of bench's "client bytes per held
  // lock": members packed (no padding holes), nothing only an election needs kept here.
  std::shared_ptr<session_core> session_;
  std::string name_;
  std::shared_ptr<hold_core> hold_;
  steady::time_point granted_at_{};  // of the current hold (release events' hold time)
  lock_type type_;
  std::uint32_t permits_{0};
  // Of the current hold, or of the acquire under way (none held): what() reads it.
  entry_kind kind_{entry_kind::exclusive};
  std::uint32_t count_{0};  // re-entries of a recursive hold; acquire refuses past its max
  // The thread that took the hold, which alone re-enters it; none once the handle moved (a
  // hand-off: the next re-entry's thread is the new owner).
  std::atomic<std::thread::id> taken_by_{};
};

}  // namespace dlock::detail
