// session_options as a session opens: the URL's query parameters merged in, every value
// checked.
#include "core/session_options_check.hpp"

#include "core/duration.hpp"

namespace dlock::detail {

// URL query parameters every backend understands set what the options left unset. Both set,
// to different values, is refused: silently preferring one would run with a lease its author
// did not choose (`dlock run --ttl 20s` with `?ttl=5s`). The message names the option as a
// library user writes it (session_options::ttl); the CLI says its flag instead.
result<session_options> apply_query(const url& u, session_options o) {
  auto merge = [&](std::string_view key, std::string_view option, std::chrono::milliseconds field,
                   bool given) -> result<std::chrono::milliseconds> {
    auto v = u.param(key);
    if (v.empty()) return field;
    auto d = parse_duration(v);
    if (!d) {
      return fail(errc::invalid_argument,
                  "URL parameter " + std::string(key) + ": " + d.error().message);
    }
    if (given && field != *d) {
      return fail(errc::invalid_argument,
                  std::string(key) + " given twice: " + format_duration(field) +
                      " in the options (session_options::" + std::string(option) + ") and " +
                      std::string(key) + "=" + v + " in the URL; give it once");
    }
    return *d;
  };
  // Given even as 15 s, the default: compared with the default's value, --ttl 15s was taken
  // for unset and the URL's ttl= won.
  auto ttl = merge("ttl", "ttl", o.ttl, o.ttl.given());
  if (!ttl) return fail(ttl.error());
  if (*ttl != o.ttl) o.ttl = *ttl;
  // Zero is "ttl / 3", the unset value, not an interval anyone asks for.
  auto keepalive = merge("keepalive", "keepalive_interval", o.keepalive_interval,
                         o.keepalive_interval.count() != 0);
  if (!keepalive) return fail(keepalive.error());
  o.keepalive_interval = *keepalive;
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
