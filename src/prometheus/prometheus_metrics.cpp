// prometheus_metrics: registers the dlock_* families (names and units after Prometheus's
// naming conventions: base unit seconds, counters end in _total) and makes observers.
#include <dlock/errors.hpp>
#include <dlock/prometheus.hpp>

#include "prometheus/prometheus_families.hpp"

namespace dlock {

namespace detail {

const prometheus::Histogram::BucketBoundaries& wait_buckets() {
  static const prometheus::Histogram::BucketBoundaries b{0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1,
                                                         5,     10,    30,   60,   300, 1800};
  return b;
}

const prometheus::Histogram::BucketBoundaries& hold_buckets() {
  static const prometheus::Histogram::BucketBoundaries b{0.01, 0.1, 1,    10,    60,
                                                         300,  900, 3600, 14400, 86400};
  return b;
}

const prometheus::Histogram::BucketBoundaries& request_buckets() {
  static const prometheus::Histogram::BucketBoundaries b{
      0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};
  return b;
}

}  // namespace detail

namespace {

std::shared_ptr<detail::prometheus_families> register_families(
    std::shared_ptr<prometheus::Registry> r, prometheus_options options) {
  if (!r) {
    throw system_error(make_error_code(errc::invalid_argument),
                       "dlock::prometheus_metrics: the registry is null");
  }
  std::set<std::string, std::less<>> names;
  for (auto& n : options.lock_labels) {
    if (n.empty()) {
      throw system_error(make_error_code(errc::invalid_argument),
                         "dlock::prometheus_metrics: an empty name in lock_labels");
    }
    names.insert(std::move(n));
  }
  auto& reg = *r;
  auto counter = [&](const char* name, const char* help) -> auto& {
    return prometheus::BuildCounter().Name(name).Help(help).Register(reg);
  };
  auto gauge = [&](const char* name, const char* help) -> auto& {
    return prometheus::BuildGauge().Name(name).Help(help).Register(reg);
  };
  auto histogram = [&](const char* name, const char* help) -> auto& {
    return prometheus::BuildHistogram().Name(name).Help(help).Register(reg);
  };
  auto& acquires = counter("dlock_acquire_total",
                           "Lock, permit and campaign acquires that returned, by result "
                           "(granted, timed_out, would_block, cancelled, error).");
  auto& wait = histogram("dlock_acquire_wait_seconds",
                         "Time from an acquire's call to its return, by result.");
  auto& hold = histogram("dlock_hold_seconds", "Time from a grant to its release.");
  auto& holds = gauge("dlock_holds",
                      "Holds granted and not yet released (a lost hold counts until released).");
  auto& lost = counter("dlock_lost_total",
                       "Holds lost while held, by reason (session_expired: the session's "
                       "lease ended; found_at_release: the release found it gone).");
  auto& requests =
      histogram("dlock_backend_request_seconds", "Latency of each backend request, by operation.");
  auto& failures = counter("dlock_backend_request_failures_total",
                           "Backend requests that failed, by operation.");
  auto& sessions =
      gauge("dlock_session_state", "Sessions in each state (live, suspended, expired, closed).");
  return std::make_shared<detail::prometheus_families>(
      detail::prometheus_families{std::move(r), std::move(names), acquires, wait, hold, holds, lost,
                                  requests, failures, sessions});
}

bool scheme_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' || c == '-' || c == '.';
}

}  // namespace

prometheus_metrics::prometheus_metrics(std::shared_ptr<prometheus::Registry> registry,
                                       prometheus_options options)
    : families_(register_families(std::move(registry), std::move(options))) {}

prometheus_metrics::~prometheus_metrics() = default;

std::shared_ptr<dlock::observer> prometheus_metrics::observer_for(std::string_view url) const {
  // Only the scheme: the rest of a URL can hold a host name per tenant or a password.
  auto end = url.find("://");
  std::string_view scheme = url.substr(0, end == std::string_view::npos ? 0 : end);
  bool ok = !scheme.empty() && scheme.front() >= 'a' && scheme.front() <= 'z';
  for (char c : scheme) ok = ok && scheme_char(c);
  if (!ok) {
    throw system_error(make_error_code(errc::invalid_argument),
                       "dlock::prometheus_metrics::observer_for: the URL has no scheme:// "
                       "(a lowercase scheme names the backend label)");
  }
  return detail::make_prometheus_observer(families_, std::string(scheme));
}

}  // namespace dlock
