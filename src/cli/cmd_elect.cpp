// dlock elect NAME [--value V] [options] -- CMD [ARGS...]: run CMD while leading election
// NAME, as `dlock run` runs it while holding a lock.
#include <unistd.h>

#include <memory>

#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "cli/run_job.hpp"

namespace dlock::cli {
namespace {

// "host pid=N": which process leads, for observers who were given no --value.
std::string default_value() {
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
  return std::string(host) + " pid=" + std::to_string(::getpid());
}

}  // namespace

void add_elect_command(CLI::App& app, int& status) {
  auto o = std::make_shared<run_options>();
  o->verb = "elect";
  auto value = std::make_shared<std::string>();
  auto* cmd = app.add_subcommand(
      "elect",
      "Run CMD while leading election NAME (one leader among the candidates): dlock elect "
      "NAME [OPTIONS] -- CMD [ARGS...]");
  add_run_options(cmd, *o, /*election=*/true);
  auto* v = cmd->add_option("--value", *value,
                            "What observers see as the leader's value, e.g. this node's address "
                            "(default: \"HOST pid=N\"; at most 16 KiB)");
  cmd->footer(
      "Campaigns in election NAME and runs CMD once elected; leadership is resigned when CMD\n"
      "exits, and the next candidate is elected. CMD gets DLOCK_NAME (the election),\n"
      "DLOCK_FENCING_TOKEN (the term: it grows with every leader) and DLOCK_URL. It runs in its\n"
      "own process group, which dlock's signals reach and which dies with dlock.\n"
      "Exit status: CMD's (128+N if killed by signal N); 64 usage error, or a backend without\n"
      "elections; 69 backend unavailable; 70 leadership lost while CMD ran (CMD's group got\n"
      "SIGTERM, SIGKILL after --grace); 75 not elected (-n, -w; or -E N); 77 permission\n"
      "denied; 126/127 CMD not runnable.\n" +
      std::string(url_forms_help));
  cmd->callback([o, value, v, &status] {
    o->campaign = v->count() > 0 ? *value : default_value();
    drop_second_separator(*o);
    status = run_job(*o);
  });
}

}  // namespace dlock::cli
