#pragma once
// The flash-sale demo: a coordinator (`dlock demo flash-sale`) starts N worker processes
// (`dlock demo flash-sale-worker`, hidden) that sell from one shop under one lock.

#include <chrono>
#include <cstdint>
#include <string>

#include "cli/shop.hpp"

namespace dlock::cli {

inline constexpr const char* flash_sale_lock = "demo/flash-sale";

struct worker_options {
  std::string url;   // lock backend
  std::string shop;  // shop database path
  int id{0};
  bool no_lock{false};
  std::int64_t deadline_ms{0};  // wall-clock end of the sale (ms since the epoch)
  int pause_min_us{1000};       // the read-pause-write window that races without the lock
  int pause_max_us{3000};
};

// The worker: prints "ready" on stdout once connected, waits for EOF on stdin (the start
// gun, so all workers race together), then sells until the stock is gone or the deadline.
// Returns 0, exit_conflict when the deadline came first, or throws cli_error.
int run_flash_sale_worker(const worker_options& o);

struct sale_report {
  shop_totals totals;
  int workers{0};
  bool no_lock{false};
  std::string url;
  std::chrono::milliseconds elapsed{0};
  bool timed_out{false};
  int failed_workers{0};
  bool json{false};
};

// Prints the summary; returns the demo's exit status.
int print_sale_report(const sale_report& r);

}  // namespace dlock::cli
