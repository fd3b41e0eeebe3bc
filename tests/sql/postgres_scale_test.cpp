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

// A semaphore's waiter awaits several entries (those it must see leave before it holds) and,
// when one leaves, waits again on what is then ahead of it: mostly the same entries. Each
// entry's LISTEN was dropped with the wait that took it and sent again for the next, a round
// trip each. A LISTEN now stays for the session's next wait on the same entry. Counted, not
// timed: LISTENs per release once the waiters have queued, 100 waiters of a semaphore(5) over 4
// sessions: 0.25-0.56 before, 0-0.04 now (in `dlock bench` over a whole run of 1 000 waiters,
// first waits included: 6.45 before, 4.51 now).
TEST(postgres_scale, a_semaphores_waiters_listen_once_per_entry) {
  server().query("CREATE EXTENSION IF NOT EXISTS pg_stat_statements");
  const auto url = server().url("ttl=60s");
  const auto listens = [] {
    return std::stod(server()
                         .query("SELECT COALESCE(sum(calls), 0) FROM pg_stat_statements WHERE "
                                "query LIKE '%.listen(%'")
                         .at(0));
  };
  const auto per_release = [&](int waiters) {
    return requests_per_release(url, "listens" + std::to_string(waiters) + "-" + random_suffix(),
                                waiters, 4, listens, 0, {}, std::chrono::milliseconds{5},
                                std::nullopt, contended_recipe::permits(5));
  };
  const double ten = per_release(10);
  const double hundred = per_release(100);
  std::printf("postgres semaphore(5) listens per release: %.2f with 10 waiters, %.2f with 100\n",
              ten, hundred);
  EXPECT_LE(hundred, 0.15) << ten << " listens per release with 10 waiters, " << hundred
                           << " with 100";
}

// Every acquire and release inserts and deletes an entry, so between two autovacuums dead rows
// pile up in the entries table. After a VACUUM its statistics say the table is nearly empty and
// its indexes large, and a planner left to them scanned the heap, dead rows and all, in each
// acquire and release: an uncontended cycle slowed from 0.3 to 1.3 ms within seconds of churn.
// Counted in buffers per cycle (pg_stat_statements, which sums a function's own statements into
// its call), each count on a fresh session, so its plans are made with the statistics of the
// moment.
TEST(postgres_scale, a_cycles_buffer_reads_do_not_grow_with_dead_rows) {
  server().query("CREATE EXTENSION IF NOT EXISTS pg_stat_statements");
  const auto url = server().url("ttl=60s&schema=churn");
  const auto cycles = [&](int n) {
    session s = session::open(url);
    dlock::mutex m(s, "churn");
    for (int i = 0; i < n; ++i) {
      m.lock();
      m.unlock();
    }
  };
  cycles(1);  // creates the schema
  server().query("ALTER TABLE churn.entries SET (autovacuum_enabled = false)");
  cycles(2000);
  server().query("VACUUM churn.entries");
  const auto buffers_per_cycle = [&] {
    server().query("SELECT pg_stat_statements_reset()");
    constexpr int n = 200;
    cycles(n);
    return std::stod(server()
                         .query("SELECT COALESCE(sum(shared_blks_hit + shared_blks_read), 0) "
                                "FROM pg_stat_statements WHERE query LIKE '%\"churn\".%' AND "
                                "(query LIKE '%enqueue_values%' OR query LIKE '%remove_entry%')")
                         .at(0)) /
           n;
  };
  const double early = buffers_per_cycle();
  cycles(6000);  // dead rows the statistics do not know of
  const double late = buffers_per_cycle();
  std::printf("buffers per cycle: %.1f after a vacuum, %.1f 6000 cycles later\n", early, late);
  EXPECT_GT(early, 0) << "nothing counted";
  EXPECT_LE(late, 1.5 * early) << early << " buffers per cycle after a vacuum, " << late
                               << " with 6000 cycles of dead rows since";
}

}  // namespace
}  // namespace dlock::test
