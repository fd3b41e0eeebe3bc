// The many-client scenarios: contended (N clients passing one lock around) and waiters (one
// holder, a long queue behind it: how much each release costs the server and the clients).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <dlock/election.hpp>
#include <dlock/inspect.hpp>
#include <dlock/mutex.hpp>
#include <dlock/semaphore.hpp>
#include <map>
#include <thread>

#include "cli/bench/bench_fleet.hpp"
#include "cli/bench/bench_probe.hpp"
#include "cli/bench/bench_scenarios.hpp"

namespace dlock::cli {
namespace {

using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

std::int64_t ns(std::chrono::nanoseconds d) { return d.count(); }

void finish_or_throw(worker_fleet& fleet, steady::time_point deadline,
                     std::vector<cycle_record>& recs) {
  std::string error;
  if (!fleet.finish(deadline, recs, error)) throw bench_failure("worker failed: " + error);
}

// The counters once the waiters have finished queueing. An entry is listed before its waiter
// has set up its wait (ZooKeeper: a watch on each of a permit's N predecessors), and what is
// still in flight when the holder releases would be counted as the releases' cost: up to 5
// requests per release for a semaphore of 5, varying from run to run. Settled: under one
// request per 200 waiters in 100 ms (what idle sessions' pings and renewals may send), or 3 s.
server_counters settled(const backend_probe& probe, int waiters) {
  auto last = probe.read();
  if (!last.requests) return last;
  const double quiet = std::max(2.0, waiters / 200.0);
  for (const auto until = steady::now() + 3s; steady::now() < until;) {
    std::this_thread::sleep_for(100ms);
    auto now = probe.read();
    if (!now.requests) return last;
    const bool calm = *now.requests - *last.requests <= quiet;
    last = now;
    if (calm) break;
  }
  return last;
}

}  // namespace

bench_report bench_contended(const bench_options& o) {
  const bool local = process_local(o.url);
  worker_fleet fleet(local);
  // Time for every client to start and connect before the measured window opens.
  const auto start = now_ns() + ns(1500ms) + ns(50ms) * o.clients;
  const auto end = start + ns(o.duration);
  for (int i = 0; i < o.clients; ++i) {
    worker_job job{"contended", o.url, o.lock, i, 1, start, end, 1'000'000, {}};
    std::string error;
    if (!fleet.start(std::move(job), error)) throw bench_failure(error);
  }
  std::vector<cycle_record> all;
  finish_or_throw(fleet, steady::now() + std::chrono::nanoseconds(end - now_ns()) + 30s, all);
  auto g = sequence_grants(std::move(all), end);

  std::map<int, std::size_t> per;
  for (int i = 0; i < o.clients; ++i) per[i] = 0;
  std::vector<std::int64_t> wait;
  for (const auto& r : g.recs) {
    ++per[r.client];
    wait.push_back(r.granted - r.asked);
  }
  auto [lo, hi] = std::minmax_element(per.begin(), per.end(),
                                      [](auto& a, auto& b) { return a.second < b.second; });
  const double secs = static_cast<double>(end - start) / 1e9;
  bench_report r{"contended", o.url, {}, {}};
  r.add("clients", o.clients);
  r.add("handoffs_per_s", static_cast<double>(g.handoffs) / secs, "handoffs/s");
  r.add("acquisitions_per_s", static_cast<double>(g.recs.size()) / secs, "acq/s");
  r.add("handoff_p50_us", percentile_us(g.handoff_ns, 50), "us");
  r.add("handoff_p99_us", percentile_us(g.handoff_ns, 99), "us");
  r.add("wait_p50_us", percentile_us(wait, 50), "us");
  r.add("wait_p99_us", percentile_us(wait, 99), "us");
  r.add("per_client_min", static_cast<double>(lo->second));
  r.add("per_client_max", static_cast<double>(hi->second));
  if (lo->second > 0) {
    r.add("fairness_max_over_min",
          static_cast<double>(hi->second) / static_cast<double>(lo->second));
  } else {
    r.add_unknown("fairness_max_over_min");
  }
  // With N permits up to N hold at once by design: an overlap is not a fault there.
  if (o.permits <= 1) r.add("overlaps", static_cast<double>(g.overlaps));
  r.notes.push_back(std::string(local ? "clients are threads (memory:// is process-local)"
                                      : "clients are separate processes") +
                    ", one session each; empty critical section");
  r.notes.push_back("handoff latency: the holder starting unlock() -> the next client's grant");
  return r;
}

bench_report bench_waiters(const bench_options& o, dlock::session& s) {
  const bool local = process_local(o.url);
  backend_probe probe(o.url);
  // The holder: the lock, or all N permits of the semaphore (released together below).
  dlock::mutex holder(s, o.lock);
  std::vector<dlock::permit> permits;
  dlock::leadership leader;
  const auto n_permits = static_cast<std::uint32_t>(o.permits);
  if (o.elect) {
    leader = dlock::election(s, o.lock).try_campaign_for("dlock bench holder", 10s);
    if (!leader) throw bench_failure("election '" + o.lock + "' has a leader");
  } else if (o.permits > 0) {
    dlock::semaphore sem(s, o.lock, n_permits);
    for (int i = 0; i < o.permits; ++i) {
      permits.push_back(sem.try_acquire_for(10s));
      if (!permits.back()) throw bench_failure("semaphore '" + o.lock + "' has permits held");
    }
  } else if (!holder.try_lock_for(10s)) {
    throw bench_failure("lock '" + o.lock + "' is held");
  }
  const std::size_t holders = o.permits > 0 ? n_permits : 1;

  // Waiters share a session per process (as threads of an application would), so 1000
  // waiters do not need 1000 server connections.
  const int procs = local ? 1 : std::clamp((o.waiters + 124) / 125, 1, 16);
  const auto end = now_ns() + ns(30s) + ns(o.duration);
  worker_fleet fleet(local);
  for (int p = 0, first = 0; p < procs; ++p) {
    int n = o.waiters / procs + (p < o.waiters % procs ? 1 : 0);
    worker_job job{"waiters", o.url, o.lock, first, n, 0, end, 1, {}, o.permits, o.elect};
    first += n;
    std::string error;
    if (!fleet.start(std::move(job), error)) throw bench_failure(error);
  }
  // Release only once every waiter is queued, so each release has a full queue behind it.
  std::size_t queued = 0;
  const auto enqueue_deadline = steady::now() + 30s;
  while (steady::now() < enqueue_deadline) {
    queued = dlock::inspect(s, o.lock).size();
    if (queued >= static_cast<std::size_t>(o.waiters) + holders) break;
    std::this_thread::sleep_for(50ms);
  }
  const auto server0 = settled(probe, o.waiters);
  const auto released = now_ns();
  if (o.elect) {
    leader.resign();
  } else if (permits.empty()) {
    holder.unlock();
  }
  for (auto& p : permits) p.release();
  std::vector<cycle_record> all;
  finish_or_throw(fleet, steady::now() + std::chrono::nanoseconds(end - now_ns()) + 30s, all);
  const auto server1 = probe.read();

  all.push_back({released, released - 1, released, -1});  // the holder's release
  auto g = sequence_grants(std::move(all), end);
  const double grants = static_cast<double>(g.recs.size() - 1);
  const double drain = g.recs.empty() ? 0 : static_cast<double>(g.recs.back().granted - released);
  bench_report r{"waiters", o.url, {}, {}};
  r.add("waiters", o.waiters);
  r.add("queued_before_release", static_cast<double>(queued) - static_cast<double>(holders));
  r.add("grants", grants);
  r.add("timeouts", o.waiters - grants);
  r.add("releases_per_s", drain > 0 ? grants / (drain / 1e9) : 0, "releases/s");
  r.add("handoff_p50_us", percentile_us(g.handoff_ns, 50), "us");
  r.add("handoff_p99_us", percentile_us(g.handoff_ns, 99), "us");
  // With N permits up to N hold at once by design: an overlap is not a fault there.
  if (o.permits <= 1) r.add("overlaps", static_cast<double>(g.overlaps));
  if (server0.requests && server1.requests && grants > 0) {
    r.add("requests_per_release", (*server1.requests - *server0.requests) / grants, "requests");
    r.notes.push_back("requests: " + probe.requests_name() +
                      ", including each waiter's grant, release and session close");
  } else {
    r.add_unknown("requests_per_release", "requests");
  }
  if (o.elect) {
    r.notes.push_back("an election: each waiter is a candidate that resigns as soon as it leads");
  }
  if (o.permits > 0) {
    r.notes.push_back("a semaphore of " + std::to_string(o.permits) +
                      " permits: the holder takes all of them and returns them together; each "
                      "waiter takes one and returns it at once");
  }
  r.notes.push_back(std::to_string(procs) + (local ? " process" : " processes") +
                    ", one session each, one thread per waiter");
  return r;
}

}  // namespace dlock::cli
