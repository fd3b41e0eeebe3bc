#pragma once
// `dlock run` and `dlock elect`: wait for a grant (a lock, a permit or leadership; see
// run_grant), run CMD under supervision while it lasts, release it when CMD exits. The two
// commands differ only in what they hold, so their options and their run are written once.

#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <vector>

#include "cli/common.hpp"

namespace dlock::cli {

struct run_options {
  std::string verb{"run"};  // the subcommand ("run", "elect"), for messages and the description
  std::string name;
  std::string url;
  // Unset is "no limit" / the default; an empty value given on the command line is an error.
  std::optional<std::string> wait;
  bool nonblock{false};
  std::optional<std::string> ttl;
  int conflict_code{exit_conflict};
  std::string grace{"5s"};
  std::optional<std::string> hold_at_least;
  std::optional<std::string> hold_at_most;
  bool quiet{false};
  bool verbose{false};
  int permits{0};                           // run --permits N: a semaphore of N permits
  std::optional<std::string> campaign;      // elect: leadership, campaigning with this value
  std::optional<std::string> metrics_file;  // --metrics-file: the last run, for Prometheus
  std::vector<std::string> command;
};

// Adds NAME, CMD and the options both commands share to `cmd`; `election` words the help
// for leadership instead of a lock.
void add_run_options(CLI::App* cmd, run_options& o, bool election);
// `dlock run -- -x -- CMD`: the first -- lets NAME start with '-', the second is the usual one
// before CMD. CLI11 keeps the second as CMD's first word (a tester's run took the lock, then
// tried to run '--'): it is dropped here.
void drop_second_separator(run_options& o);

// Returns the exit status (docs/cli.md); errors are thrown as cli_error.
int run_job(const run_options& o);

}  // namespace dlock::cli
