#pragma once
/// @file deadline.hpp
/// Conversions of a caller's timeout or deadline (any std::chrono duration or clock) to the
/// steady-clock deadline the library waits for. They saturate: a timeout too long for the
/// steady clock to represent (`std::chrono::years(1000)`, `seconds::max()`) waits forever
/// instead of overflowing into the past; a timeout of zero or less is one try.

#include <chrono>
#include <type_traits>

namespace dlock::detail {

/// The steady-clock deadline `timeout` from now.
template <class Rep, class Period>
std::chrono::steady_clock::time_point deadline_after(
    const std::chrono::duration<Rep, Period>& timeout) {
  using std::chrono::steady_clock;
  const auto now = steady_clock::now();
  // Not "<= zero": a NaN timeout compares false both ways, and is one try too.
  if (!(timeout > std::chrono::duration<Rep, Period>::zero())) return now;
  const std::chrono::duration<long double> room = steady_clock::time_point::max() - now;
  if (std::chrono::duration<long double>(timeout) >= room) return steady_clock::time_point::max();
  return now + std::chrono::ceil<steady_clock::duration>(timeout);
}

/// `deadline` on the steady clock (any clock; a non-steady one is read once, now).
template <class Clock, class Duration>
std::chrono::steady_clock::time_point to_steady_deadline(
    const std::chrono::time_point<Clock, Duration>& deadline) {
  using std::chrono::steady_clock;
  if constexpr (std::is_same_v<Clock, steady_clock>) {
    if (deadline >= std::chrono::time_point_cast<Duration>(steady_clock::time_point::max()))
      return steady_clock::time_point::max();
    return std::chrono::time_point_cast<steady_clock::duration>(deadline);
  } else {
    // In long double: compared in their common type (nanoseconds), a deadline such as
    // time_point<system_clock, seconds>::max() overflowed into the past (a tester's wait
    // "forever" returned at once).
    using wide = std::chrono::duration<long double>;
    const wide left = wide(deadline.time_since_epoch()) - wide(Clock::now().time_since_epoch());
    return deadline_after(left);
  }
}

}  // namespace dlock::detail
