#pragma once
// The one pacing rule for waits that poll: a server that pushes nothing (MySQL), a push that
// may be lost (a local wake-up socket), or a retry of a failed removal. The first look comes
// soon, because a handoff is often quick; later looks back off exponentially to a cap, so a
// long wait costs one request per cap; each pause is jittered over [pause/2, pause] so that
// waiters started together do not poll in step (AWS Architecture Blog, "Exponential Backoff
// And Jitter", 2015: "equal jitter").
//
// Threads: a pacer belongs to one wait; nap_until() may be called from any thread.

#include <chrono>
#include <functional>
#include <optional>
#include <stop_token>

#include "core/result.hpp"

namespace dlock::detail {

class poll_pacer {
 public:
  poll_pacer(std::chrono::microseconds first, std::chrono::microseconds cap) noexcept
      : pause_(first), cap_(cap), long_cap_(cap) {}
  // As above, and once `long_after` has passed since the first pause, the cap becomes
  // `long_cap`: a wait that outlasts a usual handoff (a long hold) costs fewer requests.
  poll_pacer(std::chrono::microseconds first, std::chrono::microseconds cap,
             std::chrono::microseconds long_cap, std::chrono::milliseconds long_after) noexcept
      : pause_(first), cap_(cap), long_cap_(long_cap), long_after_(long_after) {}

  // The next pause: jittered over [pause/2, pause]; the pause then doubles, up to the cap.
  std::chrono::microseconds next() noexcept;

 private:
  std::chrono::microseconds pause_;
  std::chrono::microseconds cap_;
  std::chrono::microseconds long_cap_;
  std::chrono::milliseconds long_after_{0};
  std::optional<std::chrono::steady_clock::time_point> began_;
};

// Sleeps until `until`; returns early (false) if `stop` is requested.
bool nap_until(std::chrono::steady_clock::time_point until, const std::stop_token& stop);

// Calls `changed` after each paced nap until it says true (or fails), `deadline` passes or
// `stop` is requested. A false return from `changed` means "look again later".
result<void> poll_until(std::chrono::steady_clock::time_point deadline, const std::stop_token& stop,
                        poll_pacer pacer, const std::function<result<bool>()>& changed);

// A waiter's guard against a backend signalling a change that is not there (a stale wake
// token, a wait that does not block): a run of wake-ups that each came at once and changed
// nothing would list as fast as the server answers. After three in a row, each is followed by
// a paced nap (1 ms doubling to 50 ms); a change, or a wait that blocked, ends the run.
// "At once": within twice the wake-up's listing time plus 1 ms, so a remote server is judged
// like a local one. Threads: one per wait.
class idle_wake_pacer {
 public:
  void after_wake(bool unchanged, std::chrono::steady_clock::duration waited,
                  std::chrono::steady_clock::duration listed,
                  std::chrono::steady_clock::time_point deadline, const std::stop_token& stop);

 private:
  int run_{0};
  std::optional<poll_pacer> pace_;
};

}  // namespace dlock::detail
