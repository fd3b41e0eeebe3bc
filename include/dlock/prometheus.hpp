#pragma once
/// @file prometheus.hpp
/// Prometheus metrics for dlock sessions: an optional component (library libdlock-prometheus,
/// CMake target dlock::prometheus, pkg-config dlock-prometheus) built on prometheus-cpp. Only
/// programs that link it need prometheus-cpp; libdlock itself does not.
///
/// ```cpp
/// auto registry = std::make_shared<prometheus::Registry>();
/// dlock::prometheus_metrics metrics(registry, {.lock_labels = {"nightly-report"}});
/// auto s = dlock::session::open(url, {.observer = metrics.observer_for(url)});
/// ```
///
/// The metrics (docs/observability.md has the table): dlock_acquire_total,
/// dlock_acquire_wait_seconds, dlock_hold_seconds, dlock_holds, dlock_lost_total,
/// dlock_backend_request_seconds, dlock_backend_request_failures_total, dlock_session_state.
/// Durations are in seconds (Prometheus's base unit), as doubles with the steady clock's
/// resolution. Every series has a `backend` label (the URL's scheme). Lock names become a `lock`
/// label only for the names listed in prometheus_options::lock_labels, so that the number of series
/// stays bounded whatever names an application makes up; the events of other locks are recorded in
/// series without a `lock` label.

#include <dlock/observer.hpp>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace prometheus {
class Registry;
}

namespace dlock {

namespace detail {
struct prometheus_families;
}

/// What prometheus_metrics records beyond the fixed set.
struct prometheus_options {
  /// Lock (semaphore, election) names that get a `lock` label of their own. Any other name is
  /// counted without one. Keep this short: each name multiplies the series of five metrics.
  std::vector<std::string> lock_labels{};
};

/// The dlock metric families in one prometheus::Registry, and the observers that feed them.
///
/// Threads: every member may be called from any thread, and the observers it makes are
/// thread-safe as observer.hpp requires (prometheus-cpp's metrics are; the little state an
/// observer keeps has its own mutex, held only while an event is recorded).
class prometheus_metrics {
 public:
  /// Registers the dlock_* families in `registry` (created there, or the existing ones if this
  /// registry already has them, e.g. from another prometheus_metrics: their series are shared).
  /// The registry is kept alive as long as this object or any observer it made: a session
  /// reports events after close() while it retries an unconfirmed release.
  /// Throws dlock::system_error (errc::invalid_argument) if `registry` is null or a lock label
  /// is empty; std::invalid_argument (from prometheus-cpp) if the registry already holds a
  /// family of one of these names of another type.
  prometheus_metrics(std::shared_ptr<prometheus::Registry> registry,
                     prometheus_options options = {});
  /// Leaves the families and their series in the registry (observers still feed them).
  ~prometheus_metrics();
  /// Copies share the families: observer_for() on either feeds the same series.
  prometheus_metrics(const prometheus_metrics&) = default;
  prometheus_metrics& operator=(const prometheus_metrics&) = default;

  /// A new observer for ONE session opened on `url`: pass it as session_options::observer.
  /// Its series are labelled backend="<the URL's scheme>" (never anything else of the URL,
  /// which may hold a password). One per session, because events carry no session identity:
  /// the observer tracks its session's state for dlock_session_state, counting the session
  /// as `live` from this call until its first state change, and no longer once the observer
  /// is destroyed (the session's background work over; or at once if session::open failed
  /// and nothing else kept the observer).
  /// Throws dlock::system_error (errc::invalid_argument) if `url` has no `scheme://`.
  std::shared_ptr<dlock::observer> observer_for(std::string_view url) const;

 private:
  std::shared_ptr<detail::prometheus_families> families_;
};

}  // namespace dlock
