// libFuzzer target: duration parsing never crashes and never yields a negative duration.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "core/duration.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto d = dlock::detail::parse_duration(text);
  if (d) {
    if (d->count() < 0) std::abort();
    (void)dlock::detail::format_duration(*d);
  }
  return 0;
}
