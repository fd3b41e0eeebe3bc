#pragma once
// What `dlock run` and `dlock elect` hold while CMD runs: lock NAME, with --permits N one of
// the N permits of semaphore NAME, or leadership of election NAME. One surface, so the wait,
// the supervision and the release are written once for all three.

#include <dlock/election.hpp>
#include <dlock/mutex.hpp>
#include <dlock/semaphore.hpp>
#include <optional>
#include <stop_token>
#include <string>
#include <system_error>

namespace dlock::cli {

// Which of the three to hold.
struct grant_spec {
  std::uint32_t permits{0};             // > 0: one permit of a semaphore of that many
  std::optional<std::string> campaign;  // set: leadership of an election, with this value
};

class run_grant {
 public:
  run_grant(const dlock::session& s, const std::string& name, const grant_spec& spec);

  // As basic_lock::try_lock_until / semaphore::try_acquire_until / election::campaign: true
  // when granted.
  bool try_until(std::chrono::steady_clock::time_point deadline, std::stop_token stop,
                 std::error_code& ec);
  bool try_once(std::error_code& ec);
  dlock::hold hold() const;
  void release(std::error_code& ec);
  // "lock 'NAME'", "a permit of semaphore 'NAME'", "leadership of election 'NAME'": what is
  // held, for messages.
  std::string held() const;
  // "lock 'NAME' is held", "all 3 permits of semaphore 'NAME' are held", "election 'NAME' has
  // a leader".
  std::string not_granted() const;
  // "lock 'NAME' granted", "a permit of semaphore 'NAME' (3) granted", "elected leader of
  // election 'NAME'".
  std::string granted() const;
  // Who holds it now, for a conflict message: "holder token 12  host-a pid 4242 ...", the
  // holders of a semaphore, the leader of an election; "" when nobody does or it cannot be
  // told (the conflict stands; who holds it is a courtesy).
  std::string who() const;

 private:
  dlock::session session_;
  std::string name_;
  std::optional<dlock::mutex> mutex_;
  std::optional<dlock::semaphore> sem_;
  dlock::permit permit_;
  std::optional<dlock::election> election_;
  std::string value_;
  dlock::leadership lead_;
};

}  // namespace dlock::cli
