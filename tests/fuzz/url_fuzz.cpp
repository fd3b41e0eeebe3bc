// libFuzzer target: URL parsing must never crash, and neither a parsed URL's redacted form
// nor a failed parse's message carries the password.
#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#include "core/url.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto u = dlock::detail::parse_url(text);
  if (u && u->password.size() >= 6 && u->redacted.find(u->password) != std::string::npos &&
      u->redacted.find(":***@") == std::string::npos) {
    std::abort();  // a password leaked into the text we print
  }
  // Nor does a failed parse's message: the same input with other letters where a password may
  // be (kept: what the parser reads there, '%' escapes and its separators) fails with the very
  // same message. A message that quoted any of those letters would differ.
  if (!u) {
    auto sep = text.find("://");
    auto at = text.rfind('@');
    auto colon = sep == std::string_view::npos ? sep : text.find(':', sep + 3);
    if (dlock::detail::redact_url_text(text) != text && colon != std::string_view::npos &&
        at != std::string_view::npos && at > colon) {
      std::string other(text);
      for (auto i = colon + 1; i < at; ++i) {
        auto c = static_cast<unsigned char>(other[i]);
        if (c < 0x20 || c == 0x7f || std::isxdigit(c) || std::strchr("%/?#@:", c)) continue;
        other[i] = c == 'x' ? 'y' : 'x';
      }
      // `other` may parse: with an '@' after the '?', the stretch masked runs into the query,
      // whose letters the parse reads (a key such as "=@x" against "x@x"). Then there is no
      // message to compare; the original's, which depends on no letter of it, is not a leak.
      auto v = dlock::detail::parse_url(other);
      if (!v && v.error().message != u.error().message) std::abort();
    }
  }
  (void)dlock::detail::percent_decode(text);
  return 0;
}
