// run_bench: checks the options, opens the session (which also tells an unknown URL scheme
// from an unreachable server), runs one scenario and maps failures onto exit codes.
#include <dlock/errors.hpp>
#include <dlock/session.hpp>
#include <iostream>
#include <string_view>

#include "cli/bench/bench.hpp"
#include "cli/bench/bench_scenarios.hpp"

namespace dlock::cli {
namespace {

// Every error line of dlock starts "dlock: "; a library error's message already does.
void say(std::string_view message) {
  if (message.starts_with("dlock: ")) message.remove_prefix(7);
  std::cerr << "dlock: bench: " << message << '\n';
}

int usage(const std::string& message) {
  say(message);
  return bench_exit_usage;
}

}  // namespace

int run_bench(const bench_options& o) {
  if (o.url.empty()) return usage("--url is required");
  if (o.scenario != "uncontended" && o.scenario != "contended" && o.scenario != "waiters" &&
      o.scenario != "many-locks") {
    return usage("unknown scenario '" + o.scenario +
                 "' (want uncontended, contended, waiters or many-locks)");
  }
  if (o.clients < 1 || o.clients > bench_max_clients) {
    return usage("--clients must be 1.." + std::to_string(bench_max_clients));
  }
  if (o.waiters < 1 || o.waiters > bench_max_waiters) {
    return usage("--waiters must be 1.." + std::to_string(bench_max_waiters));
  }
  if (o.count < 1 || o.count > bench_max_count) {
    return usage("--count must be 1.." + std::to_string(bench_max_count));
  }
  if (o.permits < 0 || o.permits > 1000) return usage("--permits must be 0..1000 (0: the mutex)");
  if (o.permits > 0 && o.scenario != "uncontended" && o.scenario != "waiters") {
    return usage("--permits applies to the uncontended and waiters scenarios");
  }
  if (o.elect && o.permits > 0) return usage("--elect and --permits: one recipe at a time");
  if (o.elect && o.scenario != "uncontended" && o.scenario != "waiters") {
    return usage("--elect applies to the uncontended and waiters scenarios");
  }
  if (o.duration.count() <= 0 || o.duration > bench_max_duration) {
    return usage("--duration must be more than 0 and at most 10m");
  }
  try {
    auto s = dlock::session::open(o.url, {.description = "dlock bench " + o.scenario});
    bench_report r;
    if (o.scenario == "uncontended") {
      r = bench_uncontended(o, s);
    } else if (o.scenario == "many-locks") {
      r = bench_many_locks(o, s);
    } else if (o.scenario == "waiters") {
      r = bench_waiters(o, s);
    } else {
      r = bench_contended(o);
    }
    r.url = s.url();
    s.close();
    r.print(o.json);
    return 0;
  } catch (const dlock::system_error& e) {
    say(e.what());
    return e.code() == dlock::errc::invalid_argument ? bench_exit_usage : bench_exit_unavailable;
  } catch (const bench_failure& e) {
    say(e.what());
    return bench_exit_failed;
  } catch (const std::exception& e) {
    say(e.what());
    return bench_exit_failed;
  }
}

}  // namespace dlock::cli
