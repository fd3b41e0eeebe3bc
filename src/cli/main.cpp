// dlock: distributed locks from the shell. Exit codes (sysexits.h) are listed in common.hpp
// and the README.
#include <CLI/CLI.hpp>
#include <exception>

#include "cli/bench/bench.hpp"
#include "cli/commands.hpp"
#include "cli/common.hpp"

namespace {

bool is_subcommand(const CLI::App& app, const std::string& word) {
  try {
    return app.get_subcommand_ptr(word) != nullptr;
  } catch (const CLI::OptionNotFound&) {
    return false;
  }
}

}  // namespace

int main(int argc, char** argv) {
  using namespace dlock::cli;
  CLI::App app{"dlock: distributed locks (run a command under a lock, inspect locks)", "dlock"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "dlock 0.1.0");
  int status = exit_ok;
  add_run_command(app, status);
  add_status_command(app, status);
  add_list_command(app, status);
  add_demo_command(app, status);
  add_bench_command(app, status);
  try {
    // CLI11 would only say "a subcommand is required"; name the word it did not know.
    if (argc > 1 && argv[1][0] != '-' && !is_subcommand(app, argv[1])) {
      throw cli_error(exit_usage, std::string("unknown subcommand '") + argv[1] +
                                      "' (want run, status, list, demo or bench; see dlock --help)");
    }
    app.parse(argc, argv);
    return status;
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    print_error(std::string(e.what()) + " (see dlock --help)");
    return exit_usage;
  } catch (const cli_error& e) {
    print_error(e.what());
    return e.code();
  } catch (const std::exception& e) {
    print_error(e.what());
    return exit_unavailable;
  }
}
