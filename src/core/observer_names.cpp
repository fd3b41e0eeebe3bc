#include <dlock/observer.hpp>

namespace dlock {

const char* to_string(recipe_kind k) noexcept {
  switch (k) {
    case recipe_kind::lock:
      return "lock";
    case recipe_kind::shared:
      return "shared";
    case recipe_kind::permit:
      return "permit";
    case recipe_kind::candidate:
      return "candidate";
  }
  return "lock";
}

const char* to_string(wakeup_kind k) noexcept {
  switch (k) {
    case wakeup_kind::changed:
      return "changed";
    case wakeup_kind::spurious:
      return "spurious";
    case wakeup_kind::timeout:
      return "timeout";
  }
  return "changed";
}

const char* to_string(log_level l) noexcept {
  switch (l) {
    case log_level::debug:
      return "debug";
    case log_level::info:
      return "info";
    case log_level::warning:
      return "warning";
    case log_level::error:
      return "error";
  }
  return "info";
}

}  // namespace dlock
