#pragma once
// Waiting in tests for something another process or thread does.
#include <chrono>
#include <thread>

namespace dlock::test {

// Calls `done` every `step` until it returns true or `timeout` has passed; its last answer.
template <class Pred>
bool poll_until(Pred done, std::chrono::milliseconds timeout = std::chrono::seconds{20},
                std::chrono::milliseconds step = std::chrono::milliseconds{10}) {
  auto until = std::chrono::steady_clock::now() + timeout;
  while (!done()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(step);
  }
  return true;
}

}  // namespace dlock::test
