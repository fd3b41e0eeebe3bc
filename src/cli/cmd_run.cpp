// dlock run NAME [options] -- CMD [ARGS...]: a cluster-wide flock(1).
#include <memory>

#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "cli/run_job.hpp"

namespace dlock::cli {

void add_run_command(CLI::App& app, int& status) {
  auto o = std::make_shared<run_options>();
  auto* cmd = app.add_subcommand("run",
                                 "Run CMD while holding lock NAME (a cluster-wide flock): dlock "
                                 "run NAME [OPTIONS] -- CMD [ARGS...]");
  add_run_options(cmd, *o, /*election=*/false);
  cmd->add_option("--permits", o->permits,
                  "Hold one of N permits of semaphore NAME instead of the lock: at most N "
                  "copies of CMD run at once (1-1000)")
      ->check(CLI::Validator(
          [](std::string& v) -> std::string {
            if (v.empty() || v.find_first_not_of("0123456789") != std::string::npos)
              return "'" + v + "' is not a whole number (want a number of permits, 1-1000)";
            if (v.size() > 4 || std::stoi(v) < 1 || std::stoi(v) > 1000)
              return "'" + v + "' is out of range (want a number of permits, 1-1000)";
            return {};
          },
          "1-1000"));
  cmd->footer(
      "CMD gets DLOCK_NAME, DLOCK_FENCING_TOKEN and DLOCK_URL in its environment. It runs in\n"
      "its own process group, which dlock's signals reach and which dies with dlock.\n"
      "Exit status: CMD's (128+N if killed by signal N); 64 usage error; 69 backend\n"
      "unavailable; 70 lock lost while CMD ran (CMD's group got SIGTERM, SIGKILL after\n"
      "--grace); 75 lock not granted (or -E N); 77 permission denied; 126/127 CMD not runnable.\n" +
      std::string(url_forms_help));
  cmd->callback([o, &status] {
    drop_second_separator(*o);
    status = run_job(*o);
  });
}

}  // namespace dlock::cli
