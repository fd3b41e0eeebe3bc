#pragma once
// What a fault-run contender takes (worker_contender.hpp): the mutex, one permit of a semaphore
// (--permits), or leadership of an election (--elect), behind one acquire/hold/release shape
// so the contender's loop and the checker are the same for all three recipes.

#include <chrono>
#include <cstdint>
#include <dlock/dlock.hpp>
#include <optional>
#include <stop_token>
#include <string>
#include <system_error>

namespace dlock::fault {

// The contender's lock: the mutex, one permit of a semaphore (--permits), or leadership of
// an election (--elect).
class grant {
 public:
  grant(const dlock::session& s, const std::string& name, std::uint32_t permits, bool elect,
        std::string value)
      : value_(std::move(value)) {
    if (elect) {
      election_.emplace(s, name);
    } else if (permits == 0) {
      mutex_.emplace(s, name);
    } else {
      sem_.emplace(s, name, permits);
    }
  }
  bool try_until(std::chrono::steady_clock::time_point deadline, std::stop_token stop,
                 std::error_code& ec) {
    if (mutex_) return mutex_->try_lock_until(deadline, std::move(stop), ec);
    if (election_) {
      lead_ = election_->campaign(value_, deadline, std::move(stop), ec);
      return static_cast<bool>(lead_);
    }
    permit_ = sem_->try_acquire_until(deadline, std::move(stop), ec);
    return static_cast<bool>(permit_);
  }
  dlock::hold current_hold() const {
    return mutex_ ? mutex_->current_hold() : election_ ? lead_.hold() : permit_.hold();
  }
  void unlock(std::error_code& ec) {
    if (mutex_) {
      mutex_->unlock(ec);
    } else if (election_) {
      lead_.resign(ec);
    } else {
      permit_.release(ec);
    }
  }

 private:
  std::string value_;
  std::optional<dlock::mutex> mutex_;
  std::optional<dlock::semaphore> sem_;
  std::optional<dlock::election> election_;
  dlock::permit permit_;
  dlock::leadership lead_;
};

}  // namespace dlock::fault
