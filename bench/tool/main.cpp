// dlock-bench: `dlock bench` as an executable of its own, built from the same sources
// (src/cli/bench), for builds and branches without the dlock CLI.
#include <CLI/CLI.hpp>
#include <iostream>

#include "cli/bench/bench.hpp"

int main(int argc, char** argv) {
  CLI::App app{"dlock-bench: lock throughput and latency on one backend", "dlock-bench"};
  app.require_subcommand(1);
  int status = 0;
  dlock::cli::add_bench_command(app, status);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : dlock::cli::bench_exit_usage;
  }
  return status;
}
