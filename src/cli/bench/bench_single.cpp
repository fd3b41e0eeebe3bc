// The one-client scenarios: uncontended (latency of a free lock) and many-locks (the cost of
// holding very many locks at once).
#include <chrono>
#include <dlock/election.hpp>
#include <dlock/mutex.hpp>
#include <dlock/semaphore.hpp>
#include <memory>
#include <optional>
#include <vector>

#include "cli/bench/bench_probe.hpp"
#include "cli/bench/bench_scenarios.hpp"

namespace dlock::cli {

using namespace std::chrono_literals;

bench_report bench_uncontended(const bench_options& o, dlock::session& s) {
  dlock::mutex m(s, o.lock);
  std::optional<dlock::semaphore> sem;
  if (o.permits > 0) sem.emplace(s, o.lock, static_cast<std::uint32_t>(o.permits));
  std::optional<dlock::election> election;
  if (o.elect) election.emplace(s, o.lock);
  auto take = [&] {
    if (election) {
      auto l = election->try_campaign_for("dlock bench", o.duration + 5s);
      if (!l) throw bench_failure("election '" + o.lock + "' has another leader");
      l.resign();
      return;
    }
    // Bounded: a lock somebody else holds ends the run instead of hanging it.
    if (sem) {
      auto p = sem->try_acquire_for(o.duration + 5s);
      if (!p) throw bench_failure("semaphore '" + o.lock + "' has all its permits held");
      p.release();
      return;
    }
    if (!m.try_lock_for(o.duration + 5s)) {
      throw bench_failure("lock '" + o.lock + "' is held by someone else");
    }
    m.unlock();
  };
  for (int i = 0; i < 50; ++i) take();  // warm-up: connections, statement caches
  std::vector<std::int64_t> lat;
  lat.reserve(std::min<std::size_t>(o.count, 1u << 20));
  const auto t0 = now_ns();
  const auto end = t0 + std::chrono::nanoseconds(o.duration).count();
  auto last = t0;
  for (std::size_t i = 0; i < o.count; ++i) {
    auto a = now_ns();
    take();
    last = now_ns();
    lat.push_back(last - a);
    if (last >= end) break;
  }
  bench_report r{"uncontended", s.url(), {}, {}};
  double secs = static_cast<double>(last - t0) / 1e9;
  r.add("cycles", static_cast<double>(lat.size()));
  r.add("ops_per_s", secs > 0 ? static_cast<double>(lat.size()) / secs : 0, "ops/s");
  r.add("p50_us", percentile_us(lat, 50), "us");
  r.add("p99_us", percentile_us(lat, 99), "us");
  r.add("p999_us", percentile_us(lat, 99.9), "us");
  r.add("max_us", percentile_us(lat, 100), "us");
  r.notes.push_back(o.elect ? "one cycle = campaign() + resign() in one election on one session"
                    : o.permits > 0 ? "one cycle = try_acquire_for() + release() of one permit of "
                                      "a semaphore of " +
                                          std::to_string(o.permits) + " on one session"
                                    : "one cycle = lock() + unlock() of one mutex on one session");
  return r;
}

bench_report bench_many_locks(const bench_options& o, dlock::session& s) {
  backend_probe probe(o.url);
  std::vector<std::unique_ptr<dlock::mutex>> held;
  held.reserve(o.count);
  const auto server0 = probe.read();
  const auto rss0 = rss_bytes();
  const auto t0 = now_ns();
  const auto end = t0 + std::chrono::nanoseconds(o.duration).count();
  bool timed_out = false;
  for (std::size_t i = 0; i < o.count; ++i) {
    auto m = std::make_unique<dlock::mutex>(s, o.lock + "/" + std::to_string(i));
    if (!m->try_lock_for(5s)) {
      throw bench_failure("lock '" + m->name() + "' is held by someone else");
    }
    held.push_back(std::move(m));
    if (now_ns() >= end) {
      timed_out = held.size() < o.count;
      break;
    }
  }
  const auto t1 = now_ns();
  const auto rss1 = rss_bytes();
  const auto server1 = probe.read();
  const double n = static_cast<double>(held.size());
  held.clear();  // each destructor releases its lock
  const auto t2 = now_ns();

  bench_report r{"many-locks", s.url(), {}, {}};
  r.add("locks_held", n);
  r.add("acquire_per_s", t1 > t0 ? n / (static_cast<double>(t1 - t0) / 1e9) : 0, "locks/s");
  r.add("release_per_s", t2 > t1 ? n / (static_cast<double>(t2 - t1) / 1e9) : 0, "locks/s");
  r.add("client_bytes_per_lock", n > 0 ? static_cast<double>(rss1 - rss0) / n : 0, "bytes");
  if (server0.memory_bytes && server1.memory_bytes && n > 0) {
    r.add("backend_bytes_per_lock", (*server1.memory_bytes - *server0.memory_bytes) / n, "bytes");
    r.notes.push_back("backend memory: " + probe.memory_name());
  } else {
    r.add_unknown("backend_bytes_per_lock", "bytes");
  }
  r.notes.push_back("client memory: resident set growth (/proc/self/statm) while holding");
  if (timed_out) r.notes.push_back("stopped at --duration before --count locks were held");
  return r;
}

}  // namespace dlock::cli
