// libdlock-prometheus on every backend (issue 16): the same story as prometheus_test's on
// memory:// and sqlite:// (prometheus/prometheus_support.hpp) -- acquires by result, waits,
// holds, requests, a loss by session expiry -- told through this backend, and the exposition
// accepted by promtool. The backend label is the URL's scheme.
#include <algorithm>
#include <cctype>

#include "conformance/suite.hpp"
#include "prometheus/prometheus_support.hpp"

namespace dlock::test {

TEST_P(conformance, the_prometheus_component_tells_this_backends_story) {
  const auto url = fx().url();
  auto scheme = url.substr(0, url.find("://"));
  std::ranges::transform(scheme, scheme.begin(), [](unsigned char c) { return std::tolower(c); });
  auto registry = std::make_shared<prometheus::Registry>();
  dlock::prometheus_metrics metrics(registry, {.lock_labels = {"labelled"}});
  run_story(url, scheme, metrics, *registry, [&](const dlock::session& s) { fx().expire(s); });
  scrape s(*registry);
  EXPECT_EQ(promtool_problems(s.text), "") << s.text;
}

}  // namespace dlock::test
