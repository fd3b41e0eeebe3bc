#pragma once
// The dlock_* metric families of one registry (prometheus_metrics.cpp registers them) and
// the per-session observer that feeds them (prometheus_observer.cpp).

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <dlock/observer.hpp>
#include <memory>
#include <set>
#include <string>

namespace dlock::detail {

struct prometheus_families {
  std::shared_ptr<prometheus::Registry> registry;  // kept alive by every observer
  std::set<std::string, std::less<>> lock_labels;
  prometheus::Family<prometheus::Counter>& acquires;
  prometheus::Family<prometheus::Histogram>& wait;
  prometheus::Family<prometheus::Histogram>& hold;
  prometheus::Family<prometheus::Gauge>& holds;
  prometheus::Family<prometheus::Counter>& lost;
  prometheus::Family<prometheus::Histogram>& requests;
  prometheus::Family<prometheus::Counter>& request_failures;
  prometheus::Family<prometheus::Gauge>& sessions;
};

// The bucket bounds, in seconds: waits from a free lock's round trip to a queued job's half
// hour; holds from a short critical section to a day-long job; requests around a LAN's
// round trip (a server-side wait is a request too, hence the long tail).
const prometheus::Histogram::BucketBoundaries& wait_buckets();
const prometheus::Histogram::BucketBoundaries& hold_buckets();
const prometheus::Histogram::BucketBoundaries& request_buckets();

// One session's observer: every series labelled backend=`backend`.
std::shared_ptr<observer> make_prometheus_observer(std::shared_ptr<prometheus_families> f,
                                                   std::string backend);

}  // namespace dlock::detail
