// dlock list [PREFIX] [--url URL] [--json]: the locks that have a holder or waiters.
#include <dlock/inspect.hpp>
#include <iostream>
#include <memory>

#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "cli/queue_format.hpp"

namespace dlock::cli {
namespace {

struct list_options {
  std::string prefix;
  std::string url;
  bool json{false};
};

struct lock_summary {
  std::string name;
  queue_split queue;
};

std::vector<lock_summary> collect(const dlock::session& s, const std::string& prefix) {
  std::vector<lock_summary> out;
  for (auto& name : dlock::list_locks(s, prefix)) {
    queue_split parts;
    try {
      parts = split_queue(dlock::inspect(s, name));
    } catch (const dlock::system_error& e) {
      // A name written by something other than dlock (a row inserted by hand) that dlock would
      // refuse (a control character): said and passed over, not the end of the whole list.
      if (e.code() != dlock::errc::invalid_argument) throw;
      print_error("a stored lock name was passed over: '" + control_escaped(name) +
                  "': " + e.what());
      continue;
    }
    // list_locks does not check that the owners' processes still exist; inspect does.
    if (parts.holders.empty() && parts.waiters.empty()) continue;
    out.push_back({name, std::move(parts)});
  }
  return out;
}

int list(const list_options& o) {
  auto where = resolve_url(o.url, /*create=*/false);
  std::vector<lock_summary> locks;
  std::string url = where;
  if (!sqlite_file_missing(where)) {  // a database that does not exist holds no lock
    auto session = open_session(where, {.description = "dlock list", .observe_only = true});
    try {
      locks = collect(session, o.prefix);
    } catch (...) {
      session.close();
      rethrow_as_cli_error();
    }
    url = session.url();
    session.close();
  }
  if (o.json) {
    nlohmann::json j;
    j["version"] = json_schema_version;
    j["url"] = url;
    j["locks"] = nlohmann::json::array();
    for (auto& l : locks) j["locks"].push_back(lock_json(l.name, l.queue));
    std::cout << j.dump(2) << '\n';
    return exit_ok;
  }
  if (locks.empty()) {
    std::cout << "no locks" << (o.prefix.empty() ? "" : " starting with '" + o.prefix + "'")
              << '\n';
  }
  for (auto& l : locks) {
    std::cout << control_escaped(l.name) << '\n';  // another client may name it so
    for (auto& e : l.queue.holders) std::cout << "  holder  " << entry_line(e) << '\n';
    if (l.queue.holders.empty()) std::cout << "  (no holder)\n";
    std::cout << "  " << l.queue.waiters.size() << " waiting\n";
  }
  return exit_ok;
}

}  // namespace

void add_list_command(CLI::App& app, int& status) {
  auto o = std::make_shared<list_options>();
  auto* cmd = app.add_subcommand("list", "List held or awaited locks, optionally by name prefix");
  cmd->add_option("PREFIX", o->prefix, "Only names starting with this");
  add_url_option(cmd, o->url);
  cmd->add_flag("--json", o->json, "Print JSON for scripts");
  cmd->callback([o, &status] { status = list(*o); });
}

}  // namespace dlock::cli
