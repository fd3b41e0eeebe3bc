#pragma once
// The fault suite's event log: one line per step of a worker, written by the worker itself
// (one write(2) per line, O_APPEND) and merged by the checker.
//
// Line format: `<monotonic_ns> <worker> <pid> <event> [key=value ...]`, e.g.
//   123456789 w3 4242 granted token=17
// Timestamps are chosen so that a logged critical section lies INSIDE the real one:
// `granted` is stamped after the acquire returned, `released` before unlock is called, and a
// write is stamped before it is sent. Overlapping logged sections therefore overlapped for
// real; the checker never has to guess about clock resolution.

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "support/fenced_register.hpp"

namespace dlock::fault {

enum class step {
  acquire_start,
  granted,   // token
  read,      // value, accepted (a holder's read passes the fence too)
  checked,   // token; the holder's loss-signal check said "held" (stamped before the check)
  write,     // token, value, accepted
  lost,      // token; the holder saw its loss signal (or unlock said lock_lost)
  released,  // token
  // Written by the driver, not by workers: the worker's process was killed / stopped /
  // continued, or exited on its own without releasing (a crash).
  killed,
  stopped,
  continued,
  exited,
  // Informational (the checker ignores them): acquire failed or timed out.
  acquire_failed,
};

const char* to_string(step s) noexcept;
std::optional<step> step_from(std::string_view s) noexcept;

struct event {
  std::int64_t ns{0};
  std::string worker;
  pid_t pid{0};
  step what{step::acquire_start};
  std::uint64_t token{0};
  std::int64_t value{0};
  bool accepted{false};
  std::string detail;  // free text (error codes, how a loss was seen)
};

std::string format(const event& e);
std::optional<event> parse(std::string_view line);

// Appends parsed events of `path` to `out`; malformed lines (e.g. a torn last line of a
// killed worker) are counted in the return value, not added.
std::size_t load_log(const std::string& path, std::vector<event>& out);

// Everything the checker needs about one run.
struct history {
  std::vector<event> events;                                // any order; the checker sorts
  std::vector<test::fenced_register::write_record> writes;  // the register's own record
  std::int64_t final_value{0};
};

}  // namespace dlock::fault
