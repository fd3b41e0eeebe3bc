#pragma once
// Lock-name rules, the same on every backend: 1 to 255 bytes of valid UTF-8, no control
// characters. Backends may store any such name verbatim.

#include <string_view>

#include "core/result.hpp"

namespace dlock::detail {

inline constexpr std::size_t max_lock_name = 255;

// invalid_argument naming the problem (empty, too long, control character, bad UTF-8).
result<void> validate_lock_name(std::string_view name);

}  // namespace dlock::detail
