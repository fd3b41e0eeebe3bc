#pragma once
// Figures of one benchmark run and how they are printed: aligned text for people, one JSON
// object for bench/compare.

#include <cstdint>
#include <string>
#include <vector>

namespace dlock::cli {

struct bench_metric {
  std::string key;  // snake_case, stable: bench/compare reads these
  double value{0};
  std::string unit;  // "ops/s", "us", "bytes", "" ...
  bool known{true};  // false: the backend does not report it (printed as n/a, JSON null)
};

struct bench_report {
  std::string scenario;
  std::string url;  // redacted
  std::vector<bench_metric> metrics;
  std::vector<std::string> notes;

  void add(std::string key, double value, std::string unit = {});
  void add_unknown(std::string key, std::string unit = {});
  void print(bool json) const;
};

// Nearest-rank percentile (p in [0,100]) of nanosecond samples, in microseconds. Sorts.
double percentile_us(std::vector<std::int64_t>& samples_ns, double p);

// Steady (CLOCK_MONOTONIC, system-wide) nanoseconds, comparable across processes.
std::int64_t now_ns();

// Resident set size of this process in bytes, from /proc/self/statm.
std::int64_t rss_bytes();

}  // namespace dlock::cli
