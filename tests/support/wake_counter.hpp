#pragma once
// An observer that counts its sessions' wake-ups by kind (dlock/observer.hpp): how many
// waiters one release woke, and whether any woke for nothing. Install one on every waiting
// session of a test (session_options::observer); it is thread-safe.
#include <array>
#include <atomic>
#include <cstdint>
#include <dlock/observer.hpp>
#include <dlock/session.hpp>
#include <memory>

namespace dlock::test {

class wake_counter final : public dlock::observer {
 public:
  struct counts {
    std::uint64_t changed{0}, spurious{0}, timeout{0};
    counts operator-(const counts& o) const {
      return {changed - o.changed, spurious - o.spurious, timeout - o.timeout};
    }
  };

  void on_wakeup(std::string_view, dlock::wakeup_kind kind) override {
    by_kind_[static_cast<std::size_t>(kind)].fetch_add(1);
  }

  counts now() const {
    return {by_kind_[static_cast<std::size_t>(dlock::wakeup_kind::changed)].load(),
            by_kind_[static_cast<std::size_t>(dlock::wakeup_kind::spurious)].load(),
            by_kind_[static_cast<std::size_t>(dlock::wakeup_kind::timeout)].load()};
  }

  // Session options that install `c`.
  static dlock::session_options options(std::shared_ptr<wake_counter> c) {
    dlock::session_options o;
    o.observer = std::move(c);
    return o;
  }

 private:
  std::array<std::atomic<std::uint64_t>, 3> by_kind_{};
};

}  // namespace dlock::test
