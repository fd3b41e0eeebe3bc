#include "core/names.hpp"

#include <string>

namespace dlock::detail {
namespace {

// Length of the UTF-8 sequence starting at s[i], or 0 if it is not valid UTF-8.
std::size_t utf8_length(std::string_view s, std::size_t i) {
  auto b = static_cast<unsigned char>(s[i]);
  std::size_t n = b < 0x80           ? 1
                  : (b >> 5) == 0x6  ? 2
                  : (b >> 4) == 0xE  ? 3
                  : (b >> 3) == 0x1E ? 4
                                     : 0;
  if (n == 0 || i + n > s.size()) return 0;
  for (std::size_t k = 1; k < n; ++k) {
    if ((static_cast<unsigned char>(s[i + k]) >> 6) != 0x2) return 0;
  }
  if (n == 2 && b < 0xC2) return 0;  // overlong
  // RFC 3629's table: no overlong 3- or 4-byte form, no UTF-16 surrogate (U+D800..U+DFFF), and
  // nothing above U+10FFFF. A second tester's name with an encoded surrogate was accepted, and
  // then `dlock list --json` failed for every lock on the backend (nlohmann-json refuses it).
  const auto b1 = n > 1 ? static_cast<unsigned char>(s[i + 1]) : 0u;
  if (n == 3 && ((b == 0xE0 && b1 < 0xA0) || (b == 0xED && b1 >= 0xA0))) return 0;
  if (n == 4 && ((b == 0xF0 && b1 < 0x90) || b > 0xF4 || (b == 0xF4 && b1 >= 0x90))) return 0;
  return n;
}

}  // namespace

char32_t bidi_control_at(std::string_view s, std::size_t i) {
  auto at = [&](std::size_t k) {
    return i + k < s.size() ? static_cast<unsigned char>(s[i + k]) : 0u;
  };
  if (at(0) == 0xD8 && at(1) == 0x9C) return 0x061C;
  if (at(0) != 0xE2) return 0;
  const char32_t cp = 0x2000 | ((at(1) & 0x3Fu) << 6) | (at(2) & 0x3Fu);
  if ((at(1) >> 6) != 2 || (at(2) >> 6) != 2) return 0;
  if (cp == 0x200E || cp == 0x200F || (cp >= 0x202A && cp <= 0x202E) ||
      (cp >= 0x2066 && cp <= 0x2069)) {
    return cp;
  }
  return 0;
}

result<void> validate_lock_name(std::string_view name) {
  if (name.empty()) return fail(errc::invalid_argument, "lock name is empty");
  if (name.size() > max_lock_name) {
    return fail(errc::invalid_argument,
                "lock name is " + std::to_string(name.size()) + " bytes long (at most 255)");
  }
  for (std::size_t i = 0; i < name.size();) {
    auto c = static_cast<unsigned char>(name[i]);
    if (c < 0x20 || c == 0x7f) {
      return fail(errc::invalid_argument, "lock name contains control character 0x" +
                                              std::string(1, "0123456789abcdef"[c >> 4]) +
                                              "0123456789abcdef"[c & 15] + " at byte " +
                                              std::to_string(i));
    }
    auto n = utf8_length(name, i);
    if (n == 0) {
      return fail(errc::invalid_argument,
                  "lock name is not valid UTF-8 at byte " + std::to_string(i));
    }
    // U+0080..U+009F, the C1 controls: a terminal acts on some (U+009B starts an escape
    // sequence) as on ESC.
    if (n == 2 && c == 0xC2 && static_cast<unsigned char>(name[i + 1]) < 0xA0) {
      const auto low = static_cast<unsigned char>(name[i + 1]);
      return fail(errc::invalid_argument, "lock name contains control character U+00" +
                                              std::string(1, "0123456789ABCDEF"[low >> 4]) +
                                              "0123456789ABCDEF"[low & 15] + " at byte " +
                                              std::to_string(i));
    }
    if (auto cp = bidi_control_at(name, i)) {
      std::string hex;
      for (int shift = 12; shift >= 0; shift -= 4) hex += "0123456789ABCDEF"[(cp >> shift) & 15];
      return fail(errc::invalid_argument, "lock name contains bidirectional control character U+" +
                                              hex + " at byte " + std::to_string(i) +
                                              " (it can make a name display as another)");
    }
    i += n;
  }
  return {};
}

}  // namespace dlock::detail
