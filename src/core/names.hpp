#pragma once
// Lock-name rules, the same on every backend: 1 to 255 bytes of valid UTF-8, no control
// characters (C0, C1, nor the bidirectional formatting ones). Backends may store any such name
// verbatim.

#include <cstddef>
#include <string_view>

#include "core/result.hpp"

namespace dlock::detail {

inline constexpr std::size_t max_lock_name = 255;

// invalid_argument naming the problem (empty, too long, control character, bad UTF-8).
result<void> validate_lock_name(std::string_view name);

// The code point of the bidirectional formatting character whose UTF-8 starts at s[i] (U+061C,
// U+200E, U+200F, U+202A..U+202E, U+2066..U+2069), or 0. They reorder how the text around
// them is shown, so a name holding one can display as another name (CVE-2021-42574's
// "Trojan Source"), in `dlock status`, in logs, in an operator's terminal.
char32_t bidi_control_at(std::string_view s, std::size_t i);

}  // namespace dlock::detail
