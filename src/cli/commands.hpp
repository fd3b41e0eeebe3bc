#pragma once
// One function per subcommand: each adds itself to the app and, when chosen, stores its
// exit status in `status` (errors are thrown as cli_error).

#include <CLI/CLI.hpp>

namespace dlock::cli {

void add_run_command(CLI::App& app, int& status);
void add_elect_command(CLI::App& app, int& status);
void add_leader_command(CLI::App& app, int& status);
void add_observe_command(CLI::App& app, int& status);
void add_status_command(CLI::App& app, int& status);
void add_list_command(CLI::App& app, int& status);
void add_unlock_command(CLI::App& app, int& status);
void add_demo_command(CLI::App& app, int& status);
void add_doctor_command(CLI::App& app, int& status);

}  // namespace dlock::cli
