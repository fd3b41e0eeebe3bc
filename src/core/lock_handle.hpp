#pragma once
// The lock engine written once for every backend and recipe: join the queue, decide with
// verdict.hpp, wait only for the one entry that blocks us, and remove our entry on every
// exit that does not end holding (timeout, cancel, error).

#include <dlock/basic_lock.hpp>
#include <dlock/observer.hpp>
#include <memory>
#include <stop_token>
#include <string>

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

  // Acquires in `kind` mode; false with ec set when not granted.
  bool acquire(entry_kind kind, steady::time_point deadline, std::stop_token stop,
               std::error_code& ec, std::string* message = nullptr) noexcept;
  // Releases one level (recursive) or the whole hold.
  void release(std::error_code& ec) noexcept;

  bool holds() const noexcept { return hold_ != nullptr; }
  bool holds_shared() const noexcept { return hold_ && kind_ == entry_kind::shared; }
  std::size_t count() const noexcept { return count_; }
  const std::shared_ptr<hold_core>& current() const noexcept { return hold_; }
  const std::string& name() const noexcept { return name_; }
  const std::shared_ptr<session_core>& session() const noexcept { return session_; }
  lock_type type() const noexcept { return type_; }
  std::uint32_t permits() const noexcept { return permits_; }
  // An election's handle: its acquires campaign with `value`, set on the entry before it
  // can be seen leading by its own caller.
  void campaign_with(std::string value) {
    election_ = true;
    value_ = std::move(value);
  }
  bool election() const noexcept { return election_; }

 private:
  result<void> acquire_impl(entry_kind kind, steady::time_point deadline, std::stop_token stop);
  result<queue_view> wait_for_grant(const std::string& id, queue_view q,
                                    steady::time_point deadline, bool one_try,
                                    std::stop_token stop);
  result<void> check_recipe(entry_kind kind) const;
  std::string what() const;  // "lock 'NAME'" or "semaphore 'NAME'", for messages
  failure conflict_failure(const entry& mine, const entry& other) const;
  void abandon(const std::string& entry_id) noexcept;
  void woke(wakeup_kind kind) const noexcept;  // reports a wake-up to the observer

  std::shared_ptr<session_core> session_;
  std::string name_;
  lock_type type_;
  std::uint32_t permits_{0};
  bool election_{false};
  std::string value_;
  std::shared_ptr<hold_core> hold_;
  entry_kind kind_{entry_kind::exclusive};
  std::size_t count_{0};
  steady::time_point granted_at_{};  // of the current hold (release events' hold time)
};

}  // namespace dlock::detail
