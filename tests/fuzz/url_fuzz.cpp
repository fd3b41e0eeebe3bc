// libFuzzer target: URL parsing must never crash, and a parsed URL's redacted form never
// carries the password.
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
  (void)dlock::detail::percent_decode(text);
  return 0;
}
