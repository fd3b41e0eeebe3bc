#pragma once
// Two stop tokens joined into one: a wait that ends on the caller's cancel or on its session's
// end alike.

#include <functional>
#include <stop_token>

namespace dlock::detail {

// Joins two stop tokens into one: requested when either is. Not movable (its callbacks
// point at it).
class joined_stop {
 public:
  joined_stop(std::stop_token a, std::stop_token b)
      : ca_(std::move(a), [this] { src_.request_stop(); }),
        cb_(std::move(b), [this] { src_.request_stop(); }) {}
  joined_stop(const joined_stop&) = delete;
  joined_stop& operator=(const joined_stop&) = delete;
  std::stop_token token() const { return src_.get_token(); }

 private:
  std::stop_source src_;
  std::stop_callback<std::function<void()>> ca_;
  std::stop_callback<std::function<void()>> cb_;
};

}  // namespace dlock::detail
