// dlock status NAME [--url URL] [--json]: who holds a lock and who waits, in order.
#include <dlock/inspect.hpp>
#include <iostream>
#include <memory>

#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "cli/queue_format.hpp"
#include "core/url.hpp"

namespace dlock::cli {
namespace {

struct status_options {
  std::string name;
  std::string url;
  bool json{false};
};

int status(const status_options& o) {
  check_lock_name(o.name);
  auto where = resolve_url(o.url, /*create=*/false);
  std::vector<dlock::queue_entry> q;
  std::string url = where;
  // A database that does not exist holds no lock; opening it would create it.
  if (!sqlite_file_missing(where)) {
    auto session = open_session(where, {.description = "dlock status", .observe_only = true});
    try {
      q = dlock::inspect(session, o.name);
    } catch (...) {
      session.close();
      rethrow_as_cli_error();
    }
    url = session.url();
    session.close();
  }
  auto parts = split_queue(q);
  const int code = parts.holders.empty() ? exit_free : exit_ok;
  if (o.json) {
    nlohmann::json j = lock_json(o.name, parts);
    j["version"] = json_schema_version;
    j["url"] = url;
    std::cout << j.dump(2) << '\n';
    return code;
  }
  // A semaphore's queue says so, and how many of its permits are taken; an election's, that
  // its holder leads (`dlock leader` shows the value).
  const auto permits = q.empty() ? 0u : q.front().permits;
  const bool election = !q.empty() && q.front().candidate;
  std::cout << (election  ? "election '"
                : permits ? "semaphore '"
                          : "lock '")
            << o.name << "' on " << dlock::detail::url_in_text(url) << ": "
            << (parts.holders.empty() ? "free"
                : election            ? "has a leader"
                                      : "held");
  if (permits) {
    std::cout << " (" << parts.holders.size() << " of " << permits
              << (permits == 1 ? " permit taken)" : " permits taken)");
  }
  std::cout << '\n';
  for (auto& e : parts.holders)
    std::cout << (election ? "  leader    " : "  holder    ") << entry_line(e) << '\n';
  for (std::size_t i = 0; i < parts.waiters.size(); ++i) {
    std::cout << "  waiter " << (i + 1) << (i + 1 < 10 ? "  " : " ") << entry_line(parts.waiters[i])
              << '\n';
  }
  return code;
}

}  // namespace

void add_status_command(CLI::App& app, int& status_out) {
  auto o = std::make_shared<status_options>();
  auto* cmd = app.add_subcommand("status", "Show the holder and the waiters of lock NAME");
  cmd->add_option("NAME", o->name, "Lock name")->required();
  add_url_option(cmd, o->url);
  cmd->add_flag("--json", o->json, "Print JSON for scripts");
  cmd->footer(
      "Exit status: 0 held, 1 free (as systemctl is-active), 64 usage, 69 backend\n"
      "unavailable, 77 permission denied. Viewing creates nothing.");
  cmd->callback([o, &status_out] { status_out = status(*o); });
}

}  // namespace dlock::cli
