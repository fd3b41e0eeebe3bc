#pragma once
// Durations with units, as the CLI and URL parameters take them: 500ms, 30s, 2m, 1h, 1m30s.

#include <chrono>
#include <string>
#include <string_view>

#include "core/result.hpp"

namespace dlock::detail {

// Parses "<number><unit>[<number><unit>...]" with units us, ms, s, m, h; a bare "0" is zero.
// Errors: invalid_argument naming the text.
result<std::chrono::milliseconds> parse_duration(std::string_view text);

// "1.5s", "250ms", "2m": a short human form.
std::string format_duration(std::chrono::milliseconds d);

}  // namespace dlock::detail
