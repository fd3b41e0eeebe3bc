// Lease mode's waiters on PostgreSQL are woken by NOTIFY, and re-check their predecessor's
// session now and then for a holder whose connection ended (it NOTIFYs nothing). Those
// re-checks once ran per waiter on its own backoff, so they grew with the number of waiters
// times how long each waited: 1.13 server transactions per release with 10 waiters, 17.9 with
// 100. A session's waiters now share them (pg_liveness.hpp). Counted with pg_stat_statements
// (top-level statements, counted as each ends), not timed (issue 17).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <dlock/dlock.hpp>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "support/net.hpp"
#include "support/poll.hpp"
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

// Statements per release with `waiters` queued over `sessions` sessions behind a holder, each
// holding `hold` once granted, so that the last ones wait a while and re-check meanwhile.
double per_release(const std::string& url, int waiters, int sessions,
                   std::chrono::milliseconds hold) {
  const auto lock = "scale-" + random_suffix();
  auto holder_session = session::open(url);
  mutex holder(holder_session, lock);
  holder.lock();
  std::vector<session> ss;
  for (int i = 0; i < sessions; ++i) ss.push_back(session::open(url));
  std::atomic<int> granted{0};
  std::vector<std::jthread> threads;
  for (int i = 0; i < waiters; ++i) {
    threads.emplace_back([&, i] {
      mutex m(ss[static_cast<std::size_t>(i % sessions)], lock);
      if (m.try_lock_for(std::chrono::seconds{120})) {
        ++granted;
        std::this_thread::sleep_for(hold);
        m.unlock();
      }
    });
  }
  auto queued = [&] {
    return inspect(holder_session, lock).size() >= static_cast<std::size_t>(waiters) + 1;
  };
  if (!poll_until(queued, std::chrono::seconds{60}, std::chrono::milliseconds{20})) {
    throw std::runtime_error("waiters not queued");
  }
  std::this_thread::sleep_for(std::chrono::seconds{1});  // their LISTENs and first checks done
  const double before = statements();
  holder.unlock();
  threads.clear();
  const double after = statements() - 1;  // the count's own query
  if (granted != waiters) throw std::runtime_error("not every waiter was granted");
  return (after - before) / (waiters + 1);
}

// 10 and 100 waiters over 4 sessions each (as `dlock bench` spreads its waiters over a few
// processes), each holding 10 ms, so the 100th waits a second and more after the count
// starts; a minute's lease keeps renewals out of the count. Without the shared re-checks:
// 1.9 statements per release with 10 waiters, 3.5 with 100 (2.1 with them).
TEST(postgres_scale, statements_per_release_do_not_grow_with_the_number_of_waiters) {
  server().query("CREATE EXTENSION IF NOT EXISTS pg_stat_statements");
  const auto url = server().url("ttl=60s");
  constexpr auto hold = std::chrono::milliseconds{10};
  double small = 0;
  constexpr int small_runs = 3;
  for (int run = 0; run < small_runs; ++run) small += per_release(url, 10, 4, hold);
  small /= small_runs;
  const double large = per_release(url, 100, 4, hold);
  std::printf("postgres statements per release: %.2f with 10 waiters, %.2f with 100\n", small,
              large);
  EXPECT_LE(large, 1.5 * small) << small << " statements per release with 10 waiters, " << large
                                << " with 100";
}

}  // namespace
}  // namespace dlock::test
