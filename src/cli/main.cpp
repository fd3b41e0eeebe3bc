// dlock: distributed locks from the shell. Exit codes (sysexits.h) are listed in common.hpp
// and the README.
#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <iostream>
#include <string_view>

#include "cli/bench/bench.hpp"
#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "cli/signal_watch.hpp"
#include "cli/usage_errors.hpp"

namespace {

bool is_subcommand(const CLI::App& app, const std::string& word) {
  try {
    return app.get_subcommand_ptr(word) != nullptr;
  } catch (const CLI::OptionNotFound&) {
    return false;
  }
}

// run and elect take their command only after `--`. Without it, CLI11 would read the
// command's own options as dlock's: `dlock run x sort -n f` would run sort without -n, and
// nonblocking. A word after NAME that is not an option or an option's value is such a command.
void require_separator(CLI::App& app, int argc, char** argv) {
  if (argc < 3) return;
  const std::string sub = argv[1];
  if (sub != "run" && sub != "elect") return;
  auto* cmd = app.get_subcommand(sub);
  int positionals = 0;
  for (int i = 2; i < argc; ++i) {
    const std::string w = argv[i];
    if (w == "--") return;
    if (w.size() > 1 && w[0] == '-') {
      if (w.find('=') != std::string::npos) continue;
      const auto* opt = cmd->get_option_no_throw(w);
      if (!opt) return;                                  // CLI11 names an unknown option better
      if (opt->get_items_expected_min() == 0) continue;  // a flag
      if (i + 1 < argc && std::string_view(argv[i + 1]) == "--") {
        throw dlock::cli::cli_error(dlock::cli::exit_usage,
                                    w + " needs a value before '--' (dlock " + sub + " NAME " + w +
                                        " VALUE -- CMD [ARGS...])");
      }
      ++i;  // its value
      continue;
    }
    if (++positionals > 1) {
      throw dlock::cli::cli_error(
          dlock::cli::exit_usage,
          "'" + w + "': put '--' before the command (dlock " + sub +
              " NAME [options] -- CMD [ARGS...]); without it, the command's own options would "
              "be taken for dlock's");
    }
  }
}

}  // namespace

namespace {

int run_command(int argc, char** argv) {
  using namespace dlock::cli;
  CLI::App app{
      "dlock: distributed locks (run a command under a lock or as an election's leader, inspect "
      "locks and leaders)",
      "dlock"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "dlock 0.1.0");
  // `make demo` only builds dlock; the man page is installed by cmake --install and the dlock
  // package. Someone who only built it needs the page's place in the source tree.
  app.footer(std::string(url_forms_help) +
             "\nSee dlock COMMAND --help and man dlock (in a source tree: man -l man/dlock.1).");
  int status = exit_ok;
  add_run_command(app, status);
  add_status_command(app, status);
  add_list_command(app, status);
  add_unlock_command(app, status);
  add_elect_command(app, status);
  add_leader_command(app, status);
  add_observe_command(app, status);
  add_demo_command(app, status);
  add_doctor_command(app, status);
  add_bench_command(app, status);
  try {
    // CLI11 would only say "a subcommand is required"; name the word it did not know.
    if (argc > 1 && argv[1][0] != '-' && !is_subcommand(app, argv[1])) {
      throw cli_error(exit_usage,
                      std::string("unknown subcommand '") + argv[1] +
                          "' (want run, status, list, unlock, elect, leader, observe, demo, "
                          "doctor or bench; see dlock --help)");
    }
    // CLI11 takes `--url=` as "--url" and the next word as its value: an explicitly empty value
    // must be refused, not replaced by whatever follows.
    for (int i = 1; i < argc && std::string_view(argv[i]) != "--"; ++i) {
      const std::string_view arg = argv[i];
      if (arg == "--url=") {
        throw cli_error(exit_usage,
                        "--url is empty (an unset variable?); leave --url out to use $DLOCK_URL "
                        "or the local default");
      }
      // Every other `--option=` alike: `--hold-at-most=` must not take "--" for its value.
      if (arg.size() > 3 && arg.starts_with("--") && arg.ends_with('=')) {
        throw cli_error(exit_usage, std::string(arg.substr(0, arg.size() - 1)) +
                                        " is empty (an unset variable?)");
      }
    }
    require_separator(app, argc, argv);
    app.parse(argc, argv);
    return status;
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::vector<std::string> args(argv + 1, argv + argc);
    print_error(explain_usage_error(app, args, e.what()));
    return exit_usage;
  } catch (const cli_error& e) {
    print_error(e.what());
    return e.code();
  } catch (const std::exception& e) {
    print_error(e.what());
    return exit_unavailable;
  }
}

}  // namespace

int main(int argc, char** argv) {
  dlock::cli::ignore_file_size_signal();
  const int status = run_command(argc, argv);
  // stdout is a file or a pipe, so buffered: a full disk (or /dev/full) shows only at this
  // flush. A report that never reached its reader must not pass for one that did (exit 74);
  // a reader that left early (`dlock list | head -1`) is no error.
  errno = 0;
  std::cout.flush();
  bool failed = !std::cout;
  if (std::fflush(stdout) != 0 || std::ferror(stdout)) failed = true;
  // A command that already said so (observe's flush per line) is not told twice.
  if (!failed || errno == EPIPE || status == dlock::cli::exit_io) return status;
  dlock::cli::print_error(std::string("cannot write to stdout: ") +
                          (errno != 0 ? std::strerror(errno) : "write failed"));
  return dlock::cli::exit_io;
}
