#pragma once
// The attempts of one enqueue, bounded by when the acquire gives up (caller_deadline.hpp),
// for lock_handle's acquire.

#include <optional>

#include "core/caller_deadline.hpp"
#include "core/result.hpp"

namespace dlock::detail {

// An acquire's requests before its wait, each bound to `until` (caller_deadline.hpp). A retry
// cut off there says only that time ran out: the failure worth reporting is the last one
// before it (a replica shortfall, a refused connection), where there was one.
class bounded_attempts {
 public:
  explicit bounded_attempts(steady::time_point until) : until_(until) {}
  template <class F>
  auto operator()(F&& f) -> decltype(f()) {
    caller_deadline_scope bounded(until_);
    auto r = f();
    if (!r) {
      if (steady::now() < until_) {
        cause_ = r.error();
      } else if (cause_) {
        return fail(*cause_);
      }
    }
    return r;
  }

 private:
  steady::time_point until_;
  std::optional<failure> cause_;
};

}  // namespace dlock::detail
