#include "cli/bench/bench_report.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

namespace dlock::cli {

void bench_report::add(std::string key, double value, std::string unit) {
  metrics.push_back({std::move(key), value, std::move(unit), true});
}

void bench_report::add_unknown(std::string key, std::string unit) {
  metrics.push_back({std::move(key), 0, std::move(unit), false});
}

void bench_report::print(bool json) const {
  if (json) {
    nlohmann::json j;
    j["scenario"] = scenario;
    j["url"] = url;
    auto& m = j["metrics"] = nlohmann::json::object();
    for (const auto& x : metrics) m[x.key] = x.known ? nlohmann::json(x.value) : nullptr;
    j["notes"] = notes;
    std::cout << j.dump() << std::endl;
    return;
  }
  std::cout << scenario << " on " << url << '\n';
  for (const auto& x : metrics) {
    char buf[64];
    if (!x.known) {
      std::snprintf(buf, sizeof buf, "n/a");
    } else if (x.value == std::floor(x.value) && std::fabs(x.value) < 1e15) {
      std::snprintf(buf, sizeof buf, "%.0f", x.value);
    } else {
      std::snprintf(buf, sizeof buf, "%.2f", x.value);
    }
    std::cout << "  " << x.key << std::string(x.key.size() < 28 ? 28 - x.key.size() : 1, ' ') << buf
              << (x.unit.empty() || !x.known ? "" : " " + x.unit) << '\n';
  }
  for (const auto& n : notes) std::cout << "  note: " << n << '\n';
  std::cout.flush();
}

double percentile_us(std::vector<std::int64_t>& samples_ns, double p) {
  if (samples_ns.empty()) return 0;
  std::sort(samples_ns.begin(), samples_ns.end());
  auto rank = static_cast<std::size_t>(std::ceil(p / 100.0 * samples_ns.size()));
  rank = std::clamp<std::size_t>(rank, 1, samples_ns.size());
  return samples_ns[rank - 1] / 1000.0;
}

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::int64_t rss_bytes() {
  std::ifstream f("/proc/self/statm");
  long size = 0, resident = 0;
  f >> size >> resident;
  return static_cast<std::int64_t>(resident) * sysconf(_SC_PAGESIZE);
}

}  // namespace dlock::cli
