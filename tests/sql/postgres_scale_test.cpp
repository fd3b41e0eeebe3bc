// Lease mode's waiters on PostgreSQL are woken by NOTIFY, and re-check their predecessor's
// session now and then for a holder whose connection ended (it NOTIFYs nothing). Those
// re-checks once ran per waiter on its own backoff, so they grew with the number of waiters
// times how long each waited: 1.13 server transactions per release with 10 waiters, 17.9 with
// 100. A session's waiters now share them (pg_liveness.hpp). Counted with pg_stat_statements
// (top-level statements, counted as each ends), not timed (issue 17).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <dlock/dlock.hpp>
#include <string>

#include "support/handoff_count.hpp"
#include "support/net.hpp"
#include "support/postgres_server.hpp"

namespace dlock::test {
namespace {

postgres_server& server() {
  static postgres_server s;
  return s;
}

double statements() {
  return std::stod(server().query("SELECT COALESCE(sum(calls), 0) FROM pg_stat_statements").at(0));
}

// 10 and 100 waiters over 4 sessions each (as `dlock bench` spreads its waiters over a few
// processes), each holding 10 ms, so the 100th waits a second and more after the count
// starts; a minute's lease keeps renewals out of the count. Without the shared re-checks:
// 1.9 statements per release with 10 waiters, 3.5 with 100 (2.1 with them).
TEST(postgres_scale, statements_per_release_do_not_grow_with_the_number_of_waiters) {
  server().query("CREATE EXTENSION IF NOT EXISTS pg_stat_statements");
  const auto url = server().url("ttl=60s");
  constexpr auto hold = std::chrono::milliseconds{10};
  constexpr double own = 1;     // the count's own query
  constexpr double quiet = 10;  // the shared re-checks of 4 sessions in a settle interval
  const auto per_release = [&](int waiters) {
    return requests_per_release(url, "scale" + std::to_string(waiters) + "-" + random_suffix(),
                                waiters, 4, statements, own, {}, hold, quiet);
  };
  double small = 0;
  constexpr int small_runs = 3;
  for (int run = 0; run < small_runs; ++run) small += per_release(10);
  small /= small_runs;
  const double large = per_release(100);
  std::printf("postgres statements per release: %.2f with 10 waiters, %.2f with 100\n", small,
              large);
  EXPECT_LE(large, 1.5 * small) << small << " statements per release with 10 waiters, " << large
                                << " with 100";
}

}  // namespace
}  // namespace dlock::test
