#pragma once
// A creation time read from a server (Unix milliseconds) as a system_clock time point.
// system_clock counts nanoseconds in 64 bits, so a corrupt or hostile value beyond about
// +-292 years would overflow the conversion (undefined behaviour, found by the reply fuzz
// targets); such a time is reported as unknown instead.

#include <chrono>
#include <cstdint>
#include <optional>

namespace dlock::detail {

inline std::optional<std::chrono::system_clock::time_point> unix_ms_time(std::int64_t ms) {
  using namespace std::chrono;
  constexpr auto limit = duration_cast<milliseconds>(system_clock::duration::max()).count();
  if (ms > limit || ms < -limit) return std::nullopt;
  return system_clock::time_point{duration_cast<system_clock::duration>(milliseconds{ms})};
}

}  // namespace dlock::detail
