// dlock-floor --url URL [--scenario uncontended|contended|scripts] [--clients N]
//             [--duration 10s] [--count N] [--json]
// The raw round-trip floor of one backend (see floor_common.hpp). Exit codes as dlock bench:
// 64 bad option or a scheme without a floor, 69 backend unreachable or failing. `scripts`
// (redis only) is the uncontended loop with issue 4's one-script acquire and release.
#include <CLI/CLI.hpp>
#include <iostream>

#include "core/duration.hpp"
#include "floor_common.hpp"

#ifdef DLOCK_FLOOR_ETCD
constexpr bool etcd_floor = true;
#else
constexpr bool etcd_floor = false;  // built without the etcd backend
#endif

int main(int argc, char** argv) {
  CLI::App app{"dlock-floor: the raw round trips of a lock cycle, by hand", "dlock-floor"};
  std::string url, scenario = "uncontended", duration = "10s";
  int clients = 4;
  std::size_t count = 1'000'000;
  bool json = false;
  app.add_option("--url", url, "Backend URL")->required();
  app.add_option("--scenario", scenario, "uncontended | contended | scripts (redis)")
      ->check(CLI::IsMember({"uncontended", "contended", "scripts"}))
      ->capture_default_str();
  app.add_option("--clients", clients, "contended: processes")->check(CLI::Range(1, 256));
  app.add_option("--duration", duration, "Measured time")->capture_default_str();
  app.add_option("--count", count, "uncontended: cycle cap")->check(CLI::Range(1, 10'000'000));
  app.add_flag("--json", json, "One JSON object");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 64;
  }
  auto d = dlock::detail::parse_duration(duration);
  if (!d || d->count() <= 0 || *d > std::chrono::minutes(10)) {
    std::cerr << "dlock-floor: bad --duration '" << duration << "'\n";
    return 64;
  }
  dlock::floor::target t;
  try {
    t = dlock::floor::parse_target(url);
    if (t.scheme != "redis" && t.scheme != "zk" && t.scheme != "postgres" &&
        t.scheme != "postgresql" && t.scheme != "mysql" && t.scheme != "mariadb" &&
        t.scheme != "sqlite" && !(t.scheme == "etcd" && etcd_floor)) {
      std::cerr << "dlock-floor: no floor for scheme '" << t.scheme << "'\n";
      return 64;
    }
  } catch (const std::exception& e) {
    std::cerr << "dlock-floor: " << e.what() << '\n';
    return 64;
  }
  if (scenario == "scripts" && t.scheme != "redis") {
    std::cerr << "dlock-floor: --scenario scripts: only redis has it, not " << t.scheme << '\n';
    return 64;
  }
  try {
    dlock::cli::bench_report r;
    if (scenario == "scripts") {
      auto c = dlock::floor::make_redis_scripts(t);
      r = dlock::floor::run_uncontended(*c, *d, count);
      r.scenario = "floor-scripts";
    } else if (scenario == "contended") {
      if (!dlock::floor::make_client(t)->has_blocking()) {
        std::cerr << "dlock-floor: " << t.scheme << " has no blocking primitive to contend on\n";
        return 64;
      }
      r = dlock::floor::run_contended(t, clients, *d);
    } else {
      auto c = dlock::floor::make_client(t);
      r = dlock::floor::run_uncontended(*c, *d, count);
    }
    r.url = t.scheme + "://" + t.host + (t.port ? ":" + std::to_string(t.port) : "") + "/" + t.path;
    r.print(json);
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "dlock-floor: " << e.what() << '\n';
    return 69;
  }
}
