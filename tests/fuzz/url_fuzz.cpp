// libFuzzer target: URL parsing must never crash, and neither a parsed URL's redacted form
// nor a failed parse's message carries the password.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "core/url.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto u = dlock::detail::parse_url(text);
  if (u && u->password.size() >= 6 && u->redacted.find(u->password) != std::string::npos &&
      u->redacted.find(":***@") == std::string::npos) {
    std::abort();  // a password leaked into the text we print
  }
  // Nor does a failed parse's message: whatever stands where a password may be.
  if (!u) {
    auto shown = dlock::detail::redact_url_text(text);
    auto sep = text.find("://");
    auto at = text.rfind('@');
    auto colon = sep == std::string_view::npos ? sep : text.find(':', sep + 3);
    if (shown != text && colon != std::string_view::npos && at != std::string_view::npos &&
        at > colon + 6 &&
        u.error().message.find(text.substr(colon + 1, at - colon - 1)) != std::string::npos) {
      std::abort();
    }
  }
  (void)dlock::detail::percent_decode(text);
  return 0;
}
