// The flash-sale report: what was sold, what was oversold, how the lock performed.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/common.hpp"
#include "cli/demo.hpp"

namespace dlock::cli {
namespace {

// Nearest-rank percentile of sorted samples (µs), as milliseconds.
double percentile_ms(const std::vector<long long>& sorted, double p) {
  if (sorted.empty()) return 0;
  auto rank =
      static_cast<std::size_t>(std::max(1.0, std::ceil(p * static_cast<double>(sorted.size()))));
  return static_cast<double>(sorted[std::min(rank, sorted.size()) - 1]) / 1000.0;
}

}  // namespace

int print_sale_report(const sale_report& r) {
  const auto& t = r.totals;
  // A sale with no unit of stock behind it: two buyers were sold the same unit.
  long long oversold = std::max(0LL, t.sold - (t.initial - t.left));
  double seconds = std::max(1e-3, static_cast<double>(r.elapsed.count()) / 1000.0);
  double handoffs = static_cast<double>(t.acquisitions) / seconds;
  double p50 = percentile_ms(t.waits, 0.50);
  double p99 = percentile_ms(t.waits, 0.99);
  bool ok = t.sold == t.initial && t.left == 0 && oversold == 0;

  int status = exit_ok;
  if (r.failed_workers > 0)
    status = exit_unavailable;
  else if (r.timed_out)
    status = exit_conflict;
  else if (r.no_lock ? oversold > 0 : !ok)
    status = exit_demo_failed;  // --no-lock too: scripts can tell that it oversold

  if (r.json) {
    nlohmann::json j{{"workers", r.workers},
                     {"lock", !r.no_lock},
                     {"url", r.url},
                     {"stock", t.initial},
                     {"sold", t.sold},
                     {"stock_left", t.left},
                     {"oversold", oversold},
                     {"stale_writes_refused", t.refused},
                     {"handoffs_per_second", handoffs},
                     {"wait_p50_ms", p50},
                     {"wait_p99_ms", p99},
                     {"elapsed_ms", r.elapsed.count()},
                     {"timed_out", r.timed_out},
                     {"failed_workers", r.failed_workers}};
    std::cout << j.dump(2) << std::endl;
    return status;
  }
  if (r.no_lock) {
    fmt::print("flash sale: {} workers, stock {}, WITHOUT a lock\n", r.workers, t.initial);
  } else {
    fmt::print("flash sale: {} workers, stock {}, lock '{}' on {}\n", r.workers, t.initial,
               flash_sale_lock, r.url);
  }
  fmt::print("  sold                  {}\n", t.sold);
  fmt::print("  stock left            {}\n", t.left);
  fmt::print("  oversold              {}{}\n", oversold, r.no_lock ? "" : "  (must be 0)");
  fmt::print("  stale writes refused  {}\n", t.refused);
  fmt::print("  handoffs/s            {:.1f}\n", handoffs);
  if (!r.no_lock) fmt::print("  lock wait p50 / p99   {:.2f}ms / {:.2f}ms\n", p50, p99);
  fmt::print("  elapsed               {:.2f}s\n", seconds);
  if (r.failed_workers > 0)
    fmt::print("FAILED: {} worker(s) failed (see above)\n", r.failed_workers);
  if (r.timed_out) fmt::print("STOPPED: the time limit ended the sale before the stock ran out\n");
  if (r.no_lock) {
    fmt::print(
        "{}: without the lock, workers read the same stock and sold {} unit(s) that did not "
        "exist\n",
        oversold > 0 ? "OVERSOLD" : "no overselling this time (try more workers)", oversold);
  } else if (ok) {
    fmt::print("OK: sold = stock and nothing oversold\n");
  } else if (status == exit_demo_failed) {
    fmt::print("FAILED: sold {} of {} with {} oversold\n", t.sold, t.initial, oversold);
  }
  std::fflush(stdout);
  return status;
}

}  // namespace dlock::cli
