// dlock leader NAME [--url URL] [--json]: who leads election NAME, with its value and term.
#include <iostream>
#include <memory>

#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "cli/leader_format.hpp"
#include "cli/queue_format.hpp"
#include "core/url.hpp"

namespace dlock::cli {
namespace {

struct leader_options {
  std::string name;
  std::string url;
  bool json{false};
};

int leader(const leader_options& o) {
  check_lock_name(o.name);
  auto where = resolve_url(o.url, /*create=*/false);
  std::optional<dlock::leader_info> l;
  std::string url = where;
  // A database that does not exist has no candidate; opening it would create it.
  if (!sqlite_file_missing(where)) {
    auto session = open_session(where, {.description = "dlock leader", .observe_only = true});
    try {
      l = dlock::election(session, o.name).leader();
    } catch (...) {
      session.close();
      rethrow_as_cli_error();
    }
    url = session.url();
    session.close();
  }
  const int code = l ? exit_ok : exit_no_leader;
  if (o.json) {
    nlohmann::json j;
    j["version"] = json_schema_version;
    j["name"] = o.name;
    j["url"] = url;
    j["leader"] = leader_json(l);
    std::cout << dump_json(j, 2) << '\n';
    return code;
  }
  std::cout << "election '" << o.name << "' on " << dlock::detail::url_in_text(url) << ": "
            << (l ? "has a leader" : "no leader") << '\n';
  if (l) std::cout << "  leader  " << leader_line(*l) << '\n';
  return code;
}

}  // namespace

void add_leader_command(CLI::App& app, int& status) {
  auto o = std::make_shared<leader_options>();
  auto* cmd = app.add_subcommand("leader", "Show the leader of election NAME: value, token, owner");
  cmd->add_option("NAME", o->name, "Election name")->required();
  add_url_option(cmd, o->url);
  cmd->add_flag("--json", o->json, "Print JSON for scripts");
  cmd->footer(
      "Exit status: 0 there is a leader, 1 none (as a free lock in dlock status), 64 usage or\n"
      "a backend without elections, 69 backend unavailable, 77 permission denied. Viewing\n"
      "creates nothing.");
  cmd->callback([o, &status] { status = leader(*o); });
}

}  // namespace dlock::cli
