// session_options as a session opens: the URL's query parameters merged in, every value
// checked.
#include "core/session_options_check.hpp"

#include "core/duration.hpp"

namespace dlock::detail {

// URL query parameters every backend understands set what the options left at their
// defaults. Both set, to different values, is refused: silently preferring one would run with
// a lease its author did not choose (`dlock run --ttl 20s` with `?ttl=5s`).
result<session_options> apply_query(const url& u, session_options o) {
  const session_options defaults;
  auto merge = [&](std::string_view key, std::chrono::milliseconds& field,
                   std::chrono::milliseconds fallback) -> result<void> {
    auto v = u.param(key);
    if (v.empty()) return {};
    auto d = parse_duration(v);
    if (!d) {
      return fail(errc::invalid_argument,
                  "URL parameter " + std::string(key) + ": " + d.error().message);
    }
    if (field != fallback && field != *d) {
      return fail(errc::invalid_argument,
                  std::string(key) + " given twice: " + format_duration(field) +
                      " in the options (--" + std::string(key) + ") and " + std::string(key) + "=" +
                      v + " in the URL; give it once");
    }
    field = *d;
    return {};
  };
  if (auto r = merge("ttl", o.ttl, defaults.ttl); !r) return fail(r.error());
  if (auto r = merge("keepalive", o.keepalive_interval, defaults.keepalive_interval); !r)
    return fail(r.error());
  if (o.ttl.count() <= 0) return fail(errc::invalid_argument, "ttl must be greater than zero");
  // Below this the drift allowance (1% + 2 ms) leaves no lease to renew: every hold would be
  // lost at once.
  if (o.ttl < std::chrono::milliseconds{10}) {
    return fail(errc::invalid_argument,
                "ttl " + std::to_string(o.ttl.count()) + "ms is too short (at least 10ms)");
  }
  if (o.keepalive_interval.count() < 0 || o.keepalive_interval >= o.ttl) {
    return fail(errc::invalid_argument, "keepalive interval must be between 0 and the ttl");
  }
  if (o.request_timeout.count() <= 0) {
    return fail(errc::invalid_argument, "request_timeout must be greater than zero");
  }
  if (o.open_timeout.count() < 0) {
    return fail(errc::invalid_argument, "open_timeout must not be negative");
  }
  if (o.release_timeout.count() <= 0) {
    return fail(errc::invalid_argument, "release_timeout must be greater than zero");
  }
  if (o.retry.max_attempts < 0 || o.retry.base_delay.count() < 0 || o.retry.max_delay.count() < 0) {
    return fail(errc::invalid_argument, "retry policy values must not be negative");
  }
  return o;
}

}  // namespace dlock::detail
