#pragma once
// Tells the engine, once, that a session ended with its connection (session_event::expired).
// Shared by the SQL backends, whose connection is the session. Thread-safe; the handler runs
// outside the lock, so it may call back into the backend.

#include <functional>
#include <mutex>

#include "core/backend.hpp"

namespace dlock::detail {

class loss_notice {
 public:
  void set_handler(std::function<void(session_event)> handler) {
    std::lock_guard lk(mu_);
    handler_ = std::move(handler);
  }

  // Only the first call reaches the handler.
  void announce() {
    std::function<void(session_event)> h;
    {
      std::lock_guard lk(mu_);
      if (announced_) return;
      announced_ = true;
      h = handler_;
    }
    if (h) h(session_event::expired);
  }

 private:
  std::mutex mu_;
  std::function<void(session_event)> handler_;
  bool announced_{false};
};

}  // namespace dlock::detail
