#include "core/duration.hpp"

#include <cctype>
#include <charconv>
#include <cstdio>

namespace dlock::detail {

result<std::chrono::milliseconds> parse_duration(std::string_view text) {
  using namespace std::chrono;
  auto bad = [&](const std::string& why) {
    return fail(errc::invalid_argument,
                "duration '" + std::string(text) + "': " + why + " (want e.g. 500ms, 30s, 2m)");
  };
  // A stray character, named with what precedes it: '1s ' (a space pasted in) said only
  // "expected a number".
  auto unexpected = [&](std::string_view rest) {
    const auto read = text.substr(0, text.size() - rest.size());
    // The whole UTF-8 character, not its first byte alone (which printed as '\xef\xbf\xbd').
    const auto lead = static_cast<unsigned char>(rest.front());
    const std::size_t len = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1;
    return bad("unexpected '" + std::string(rest.substr(0, len)) + "' " +
               (read.empty() ? std::string("at the start") : "after '" + std::string(read) + "'"));
  };
  if (text.empty()) return bad("empty");
  if (text.front() == '-') return bad("must not be negative");
  if (text == "0") return milliseconds{0};
  double total_us = 0;
  std::string_view rest = text;
  while (!rest.empty()) {
    std::size_t n = 0;
    while (n < rest.size() && (std::isdigit(static_cast<unsigned char>(rest[n])) || rest[n] == '.'))
      ++n;
    if (n == 0) return unexpected(rest);
    double value = 0;
    auto [p, ec] = std::from_chars(rest.data(), rest.data() + n, value);
    if (ec != std::errc{} || p != rest.data() + n) return bad("bad number");
    rest = rest.substr(n);
    // Go's duration syntax also takes microseconds as "µs" (micro sign or Greek mu).
    std::string_view unit;
    for (std::string_view micro : {"\xC2\xB5s", "\xCE\xBCs"}) {
      if (rest.starts_with(micro)) {
        unit = "us";
        rest = rest.substr(micro.size());
        break;
      }
    }
    if (unit.empty()) {
      std::size_t u = 0;
      while (u < rest.size() && std::isalpha(static_cast<unsigned char>(rest[u]))) ++u;
      if (u == 0 && !rest.empty()) return unexpected(rest);
      unit = rest.substr(0, u);
      rest = rest.substr(u);
    }
    double scale = 0;
    if (unit == "us")
      scale = 1;
    else if (unit == "ms")
      scale = 1e3;
    else if (unit == "s")
      scale = 1e6;
    else if (unit == "m")
      scale = 60e6;
    else if (unit == "h")
      scale = 3600e6;
    else
      return bad(unit.empty() ? "missing unit" : "unknown unit");
    total_us += value * scale;
  }
  if (total_us > 1e15) return bad("too large");
  return milliseconds{static_cast<long long>((total_us + 999) / 1000)};
}

std::string format_duration(std::chrono::milliseconds d) {
  char buf[64];
  long long ms = d.count();
  if (ms < 0) return "-" + format_duration(-d);
  if (ms < 1000)
    std::snprintf(buf, sizeof buf, "%lldms", ms);
  else if (ms < 60'000)
    std::snprintf(buf, sizeof buf, "%.1fs", ms / 1000.0);
  else if (ms < 3'600'000)
    std::snprintf(buf, sizeof buf, "%lldm%llds", ms / 60'000, (ms / 1000) % 60);
  else
    std::snprintf(buf, sizeof buf, "%lldh%lldm", ms / 3'600'000, (ms / 60'000) % 60);
  return buf;
}

}  // namespace dlock::detail
