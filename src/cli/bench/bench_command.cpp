// The `bench` subcommand's options, shared by the dlock CLI and the standalone dlock-bench.
#include <CLI/CLI.hpp>

#include "cli/bench/bench.hpp"
#include "core/duration.hpp"

namespace dlock::cli {

void add_bench_command(CLI::App& app, int& status) {
  auto o = std::make_shared<bench_options>();
  auto duration = std::make_shared<std::string>("10s");
  auto* cmd = app.add_subcommand("bench", "Measure lock throughput and latency on a backend");
  cmd->add_option("--url", o->url, "Backend URL (only this backend is ever contacted)")->required();
  cmd->add_option("--scenario", o->scenario, "uncontended | contended | waiters | many-locks")
      ->capture_default_str();
  cmd->add_option("--clients", o->clients, "contended: client processes")->capture_default_str();
  cmd->add_option("--duration", *duration, "Measured time (e.g. 10s, 500ms)")
      ->capture_default_str();
  cmd->add_option("--count", o->count, "many-locks: locks held; uncontended: cycle cap")
      ->capture_default_str();
  cmd->add_option("--waiters", o->waiters, "waiters: queued waiters")->capture_default_str();
  cmd->add_option("--lock", o->lock, "Lock name (prefix for many-locks)")->capture_default_str();
  cmd->add_option("--permits", o->permits,
                  "uncontended, waiters: a permit of a semaphore of N instead of the mutex")
      ->capture_default_str();
  cmd->add_flag("--elect", o->elect,
                "uncontended, waiters: campaign in an election (and resign) instead of the mutex");
  cmd->add_flag("--json", o->json, "One JSON object instead of text");
  cmd->callback([o, duration, &status] {
    auto d = dlock::detail::parse_duration(*duration);
    if (!d) throw CLI::ValidationError("--duration", d.error().message);
    o->duration = *d;
    status = run_bench(*o);
  });

  // Hidden: the worker processes the contended and waiters scenarios start.
  auto* worker = app.add_subcommand(bench_worker_command, "");
  worker->group("");
  worker->prefix_command();
  worker->callback([worker, &status] { status = run_bench_worker(worker->remaining()); });
}

}  // namespace dlock::cli
