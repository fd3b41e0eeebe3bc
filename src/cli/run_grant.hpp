#pragma once
// What `dlock run` holds while CMD runs: lock NAME, or with --permits N one of the N permits
// of semaphore NAME. One surface, so the wait, the supervision and the release are written
// once for both.

#include <dlock/mutex.hpp>
#include <dlock/semaphore.hpp>
#include <optional>
#include <stop_token>
#include <string>
#include <system_error>

namespace dlock::cli {

class run_grant {
 public:
  // permits == 0: the lock; otherwise a semaphore of that many permits.
  run_grant(const dlock::session& s, const std::string& name, std::uint32_t permits);

  // As basic_lock::try_lock_until / semaphore::try_acquire_until: true when granted.
  bool try_until(std::chrono::steady_clock::time_point deadline, std::stop_token stop,
                 std::error_code& ec);
  bool try_once(std::error_code& ec);
  dlock::hold hold() const;
  void release(std::error_code& ec);
  // "lock 'NAME'" or "semaphore 'NAME'", for messages.
  std::string what() const;
  // "lock 'NAME' is held", "all 3 permits of semaphore 'NAME' are held".
  std::string not_granted() const;
  // "lock 'NAME' granted", "a permit of semaphore 'NAME' (3) granted".
  std::string granted() const;
  bool is_semaphore() const noexcept { return sem_.has_value(); }

 private:
  std::string name_;
  std::optional<dlock::mutex> mutex_;
  std::optional<dlock::semaphore> sem_;
  dlock::permit permit_;
};

}  // namespace dlock::cli
