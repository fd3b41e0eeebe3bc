#include "cli/run_grant.hpp"

namespace dlock::cli {

run_grant::run_grant(const dlock::session& s, const std::string& name, std::uint32_t permits)
    : name_(name) {
  if (permits == 0) {
    mutex_.emplace(s, name);
  } else {
    sem_.emplace(s, name, permits);
  }
}

bool run_grant::try_until(std::chrono::steady_clock::time_point deadline, std::stop_token stop,
                          std::error_code& ec) {
  if (mutex_) return mutex_->try_lock_until(deadline, std::move(stop), ec);
  permit_ = sem_->try_acquire_until(deadline, std::move(stop), ec);
  return static_cast<bool>(permit_);
}

bool run_grant::try_once(std::error_code& ec) {
  if (mutex_) return mutex_->try_lock(ec);
  return try_until(std::chrono::steady_clock::time_point::min(), {}, ec);
}

dlock::hold run_grant::hold() const { return mutex_ ? mutex_->current_hold() : permit_.hold(); }

void run_grant::release(std::error_code& ec) {
  if (mutex_) {
    mutex_->unlock(ec);
  } else {
    permit_.release(ec);
  }
}

std::string run_grant::what() const {
  if (mutex_) return "lock '" + name_ + "'";
  return "semaphore '" + name_ + "'";
}

std::string run_grant::not_granted() const {
  if (mutex_) return what() + " is held";
  if (sem_->max() == 1) return "the one permit of " + what() + " is held";
  return "all " + std::to_string(sem_->max()) + " permits of " + what() + " are held";
}

std::string run_grant::granted() const {
  if (mutex_) return what() + " granted";
  return "a permit of " + what() + " (" + std::to_string(sem_->max()) + ") granted";
}

}  // namespace dlock::cli
