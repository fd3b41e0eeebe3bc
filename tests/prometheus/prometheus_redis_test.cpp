// libdlock-prometheus on a server backend: the same story as on memory:// and sqlite://
// (prometheus_support.hpp) through a real redis-server, its loss forced by deleting the
// session's key.
#include "prometheus/prometheus_support.hpp"
#include "support/redis_server.hpp"

namespace dlock::test {
namespace {

TEST(prometheus_redis, counts_what_a_redis_session_does_and_passes_promtool) {
  redis_server server;
  const auto prefix = "p" + random_suffix() + ":";
  auto registry = std::make_shared<prometheus::Registry>();
  dlock::prometheus_metrics metrics(registry, {.lock_labels = {"labelled"}});
  run_story("redis://" + server.address() + "?ttl=2s&prefix=" + prefix, "redis", metrics, *registry,
            [&](const dlock::session& s) {
              server.command({"DEL", prefix + "s:" + s.id()});
            });
  scrape s(*registry);
  EXPECT_EQ(promtool_problems(s.text), "") << s.text;
}

}  // namespace
}  // namespace dlock::test
