#pragma once
// The server's clock against this host's, for `dlock doctor` (PostgreSQL, MySQL): leases run
// on the server's clock, so a distance between the two is harmless in itself, but a large one
// says a clock is not synchronised, and correcting it steps every lease's end.

#include <chrono>
#include <cmath>
#include <dlock/doctor.hpp>
#include <string>

namespace dlock::detail {

// `server_ms`: the server's wall clock (ms since the epoch) read by a request sent at
// `before` and answered at `after` (this host's wall clock).
inline check_finding clock_finding(double server_ms, std::chrono::system_clock::time_point before,
                                   std::chrono::system_clock::time_point after) {
  using namespace std::chrono;
  auto mid = duration_cast<duration<double, std::milli>>(
                 (before + (after - before) / 2).time_since_epoch())
                 .count();
  auto rtt = duration_cast<milliseconds>(after - before).count();
  auto distance = static_cast<long long>(std::llround(server_ms - mid));
  check_finding f{
      .check = "clock",
      .value = std::to_string(distance) + " ms (+/- " + std::to_string(rtt / 2 + 1) + ")"};
  if (std::llabs(distance) <= 1000 + rtt) {
    f.reason = "the server's clock is within a second of this host's";
  } else {
    f.status = check_status::weakened;
    f.guarantee = "loss-signal";
    f.reason = "the server's clock is " + std::to_string(distance) +
               " ms from this host's: one is not synchronised, and stepping it back moves "
               "every lease's end on the server (run NTP on both)";
  }
  return f;
}

}  // namespace dlock::detail
