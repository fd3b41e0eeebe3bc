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
  return n;
}

}  // namespace

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
    i += n;
  }
  return {};
}

}  // namespace dlock::detail
