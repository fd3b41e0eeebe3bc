// libFuzzer target: lock-name validation accepts only 1-255 bytes of UTF-8 without control
// characters.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "core/names.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view name(reinterpret_cast<const char*>(data), size);
  if (!dlock::detail::validate_lock_name(name)) return 0;
  if (name.empty() || name.size() > 255) std::abort();
  for (unsigned char c : name) {
    if (c < 0x20 || c == 0x7f) std::abort();
  }
  return 0;
}
