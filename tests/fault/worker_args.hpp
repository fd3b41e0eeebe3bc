#pragma once
// The fault worker's command line (worker.cpp documents its options).

#include <cstdint>
#include <string>

namespace dlock::fault::worker {

struct config {
  std::string url, lock, reg, log, id;
  int threads{1};
  long max_ops{1'000'000};
  double max_seconds{60};
  int pause_min_ms{15}, pause_max_ms{40};
  int wait_ms{2000};  // each acquire's deadline
  bool late_check{false};
  bool cancel_waits{false};
  std::uint32_t permits{0};
  bool elect{false};
  bool no_register{false};
};

// Prints "dlock_fault_worker: <why>" and exits 2.
[[noreturn]] void usage(const char* why);

// Exits 2 (usage) on a bad or missing argument.
config parse_args(int argc, char** argv);

}  // namespace dlock::fault::worker
