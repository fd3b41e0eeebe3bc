// dlock status NAME [--url URL] [--json]: who holds a lock and who waits, in order.
#include <dlock/inspect.hpp>
#include <iostream>
#include <memory>

#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "cli/queue_format.hpp"

namespace dlock::cli {
namespace {

struct status_options {
  std::string name;
  std::string url;
  bool json{false};
};

int status(const status_options& o) {
  check_lock_name(o.name);
  auto session = open_session(resolve_url(o.url), {.description = "dlock status"});
  std::vector<dlock::queue_entry> q;
  try {
    q = dlock::inspect(session, o.name);
  } catch (...) {
    session.close();
    rethrow_as_cli_error();
  }
  auto url = session.url();
  session.close();
  auto parts = split_queue(q);
  if (o.json) {
    nlohmann::json j;
    j["name"] = o.name;
    j["url"] = url;
    j["held"] = !parts.holders.empty();
    j["holders"] = nlohmann::json::array();
    for (auto& e : parts.holders) j["holders"].push_back(entry_json(e));
    j["waiters"] = nlohmann::json::array();
    for (auto& e : parts.waiters) j["waiters"].push_back(entry_json(e));
    std::cout << j.dump(2) << '\n';
    return exit_ok;
  }
  std::cout << "lock '" << o.name << "' on " << url << ": "
            << (parts.holders.empty() ? "free" : "held") << '\n';
  for (auto& e : parts.holders) std::cout << "  holder    " << entry_line(e) << '\n';
  for (std::size_t i = 0; i < parts.waiters.size(); ++i) {
    std::cout << "  waiter " << (i + 1) << (i + 1 < 10 ? "  " : " ") << entry_line(parts.waiters[i])
              << '\n';
  }
  return exit_ok;
}

}  // namespace

void add_status_command(CLI::App& app, int& status_out) {
  auto o = std::make_shared<status_options>();
  auto* cmd = app.add_subcommand("status", "Show the holder and the waiters of lock NAME");
  cmd->add_option("NAME", o->name, "Lock name")->required();
  add_url_option(cmd, o->url);
  cmd->add_flag("--json", o->json, "Print JSON for scripts");
  cmd->callback([o, &status_out] { status_out = status(*o); });
}

}  // namespace dlock::cli
