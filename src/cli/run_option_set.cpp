// The options `dlock run` and `dlock elect` share (their parsing, checked in run_job).
#include <string>

#include "cli/run_job.hpp"

namespace dlock::cli {

void drop_second_separator(run_options& o) {
  if (!o.command.empty() && o.command.front() == "--") o.command.erase(o.command.begin());
}

void add_run_options(CLI::App* cmd, run_options& o, bool election) {
  cmd->add_option("NAME", o.name, election ? "Election name" : "Lock name")->required();
  cmd->add_option("CMD", o.command, "The command and its arguments, after --");
  add_url_option(cmd, o.url);
  auto* w = cmd->add_option("-w,--wait", o.wait, "Give up after waiting this long (e.g. 30s)");
  auto* n = cmd->add_flag(
      "-n,--nonblock", o.nonblock,
      election ? "Fail at once if there is a leader" : "Fail at once if the lock is held");
  w->excludes(n);
  cmd->add_option("--ttl", o.ttl,
                  election ? "Lease length: how soon a stopped leader is replaced (default 15s)"
                           : "Lease length (default 15s)");
  cmd->add_option("-E,--conflict-exit-code", o.conflict_code,
                  election ? "Exit status when not elected (default 75)"
                           : "Exit status when the lock is not granted (default 75)")
      ->check(CLI::Validator(
          [](std::string& v) -> std::string {
            if (v.empty() || v.find_first_not_of("0123456789") != std::string::npos ||
                v.size() > 3 || std::stoi(v) > 255)
              return "'" + v + "' is not an exit status (want a whole number 0-255)";
            return {};
          },
          "0-255"));
  cmd->add_option("--hold-at-least", o.hold_at_least,
                  election ? "Keep leadership until this long after the election, even if CMD "
                             "ends sooner"
                           : "Keep the lock until this long after the grant, even if CMD ends "
                             "sooner (cron skew between nodes)");
  cmd->add_option("--hold-at-most", o.hold_at_most,
                  election ? "SIGTERM CMD's group once it has led this long (SIGKILL after "
                             "--grace); then the next candidate leads"
                           : "SIGTERM CMD's group once it has held the lock this long (SIGKILL "
                             "after --grace)");
  auto* q = cmd->add_flag(
      "-q,--quiet", o.quiet,
      election ? "Say nothing when not elected" : "Say nothing when the lock is not granted");
  auto* v = cmd->add_flag("-v,--verbose", o.verbose, "Say how long the wait took and the token");
  q->excludes(v);
  cmd->add_option("--metrics-file", o.metrics_file,
                  "After the run, write its outcome, times and token to this file in the "
                  "Prometheus text format (node_exporter's textfile collector)");
  cmd->add_option("--grace", o.grace,
                  election ? "SIGTERM to SIGKILL delay when leadership is lost (default 5s)"
                           : "SIGTERM to SIGKILL delay when the lock is lost (default 5s)");
}

}  // namespace dlock::cli
