#pragma once
// `dlock run|elect --metrics-file PATH`: what the last run of a job did, in the Prometheus
// text format that node_exporter's textfile collector reads, so "did last night's job run,
// and where" is a query and an alert, not a log search.
//
// The file is replaced atomically after every run (written beside PATH, flushed, renamed), so
// the collector never reads half a file, and a run that ended in an error still replaces it.
// Metric names and units follow Prometheus's conventions (seconds; *_timestamp_seconds for
// times since the epoch); the outcome is one series per possible value (1 for this run's).

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

namespace dlock::cli {

// How a run ended, for dlock_run_last_outcome{outcome=...}.
enum class run_outcome {
  ran,          // granted, CMD ran and ended (its status is the exit code)
  conflict,     // not granted: held by another, or not within --wait / -n
  lost,         // granted, then lost while CMD ran (exit 70)
  interrupted,  // a signal ended the wait
  error,        // dlock could not run the job (usage, backend unreachable, ...)
};

struct run_report {
  std::string verb;  // "run" or "elect"
  std::string name;  // the lock, semaphore or election
  std::chrono::system_clock::time_point started{};
  std::chrono::system_clock::time_point ended{};
  run_outcome outcome{run_outcome::error};
  int exit_code{0};                                  // dlock's exit status: what cron saw
  std::optional<std::chrono::nanoseconds> waited{};  // from start until granted (or given up)
  std::optional<std::chrono::nanoseconds> held{};    // from the grant until the release
  std::optional<std::uint64_t> token{};              // the grant's fencing token
  std::optional<bool> window_kept{};  // --hold-at-least given: whether the lease outlived it
};

// Throws cli_error(exit_usage) when `path` names a directory, or a file whose directory does
// not exist or is not writable.
void check_metrics_path(const std::string& path);

// The text of the file for `r`.
std::string format_run_metrics(const run_report& r);

// Replaces `path` with format_run_metrics(r) atomically. Throws cli_error(exit_io, naming
// the path and the reason) when it cannot.
void write_run_metrics(const std::string& path, const run_report& r);

}  // namespace dlock::cli
