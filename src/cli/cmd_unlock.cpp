// dlock unlock NAME --force [--yes] [--url URL]: breaks a stuck lock by ending its holder's
// session (dlock::force_unlock). An operator's last resort, so it is never implied: without
// --force it refuses, and it asks before acting unless --yes.
#include <unistd.h>

#include <dlock/inspect.hpp>
#include <iostream>
#include <memory>
#include <string>

#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "cli/queue_format.hpp"
#include "core/url.hpp"

namespace dlock::cli {
namespace {

struct unlock_options {
  std::string name;
  std::string url;
  bool force{false};
  bool yes{false};
};

// "lock 'x'", "election 'x'" or "semaphore 'x'", from what its holders are.
std::string what(const std::string& name, const std::vector<dlock::queue_entry>& holders) {
  for (auto& h : holders) {
    if (h.candidate) return "election '" + name + "'";
    if (h.permits > 0) return "semaphore '" + name + "'";
  }
  return "lock '" + name + "'";
}

bool confirmed(const std::string& name, const std::vector<dlock::queue_entry>& holders) {
  std::cerr << what(name, holders) << " is held by:\n";
  for (auto& h : holders) std::cerr << "  " << entry_line(h) << '\n';
  std::cerr << "End the holder's session? Every lock it holds goes with it, and the holder\n"
               "learns only at its next renewal: only fencing tokens keep its late writes out.\n"
               "Type 'yes' to go on: ";
  std::string answer;
  if (!std::getline(std::cin, answer)) return false;
  return answer == "yes";  // as the prompt says: a stray "y" does not end a session
}

int unlock(const unlock_options& o) {
  check_lock_name(o.name);
  if (!o.force) {
    throw cli_error(exit_usage,
                    "unlock breaks another client's lock: add --force (a holder releases its own "
                    "lock by ending its `dlock run`, or through the library)");
  }
  auto where = resolve_url(o.url, /*create=*/false);
  if (sqlite_file_missing(where)) {
    std::cout << "lock '" << o.name << "' on " << dlock::detail::url_in_text(where)
              << ": free, nothing to do\n";
    return exit_ok;
  }
  auto session = open_session(where, {.description = "dlock unlock --force"});
  try {
    // A free lock is free on every backend (exit 0, as the README says), also where a holder
    // could not be ended: a clean-up script need not know which backend it runs on.
    auto parts = split_queue(dlock::inspect(session, o.name));
    if (parts.holders.empty()) {
      std::cout << "lock '" << o.name << "' on " << dlock::detail::url_in_text(session.url())
                << ": free, nothing to do\n";
      session.close();
      return exit_ok;
    }
    // The usage mistake first, on every backend alike (zk:// said 69 "cannot end" here and the
    // others 64, a tester's).
    if (!o.yes && !::isatty(STDIN_FILENO)) {
      throw cli_error(exit_usage,
                      "not a terminal to ask on: add --yes to end the holder's "
                      "session without asking");
    }
    if (const auto caps = session.capabilities(); !caps.ends_other_sessions) {
      const auto why = caps.no_ending_others_because;
      throw cli_error(exit_unavailable, session.url() + " cannot end another client's session: " +
                                            (why.empty() ? std::string("stop the holder's process")
                                                         : std::string(why)));
    }
    if (!o.yes) {
      if (!confirmed(o.name, parts.holders)) {
        std::cerr << "dlock: nothing changed\n";
        session.close();
        return exit_conflict;
      }
    }
    auto ended = dlock::force_unlock(session, o.name);
    const auto subject = what(o.name, parts.holders);
    for (auto& h : ended) {
      std::cout << subject << ": ended the session of " << entry_line(h) << '\n';
    }
    if (ended.empty()) std::cout << subject << ": freed meanwhile, nothing to do\n";
  } catch (const cli_error&) {
    session.close();
    throw;
  } catch (...) {
    session.close();
    rethrow_as_cli_error();
  }
  session.close();
  return exit_ok;
}

}  // namespace

void add_unlock_command(CLI::App& app, int& status_out) {
  auto o = std::make_shared<unlock_options>();
  auto* cmd = app.add_subcommand(
      "unlock", "Break lock NAME held by another client: end its holder's session (--force)");
  cmd->add_option("NAME", o->name, "Lock name")->required();
  add_url_option(cmd, o->url);
  cmd->add_flag("--force", o->force, "Required: this ends another client's session");
  cmd->add_flag("-y,--yes", o->yes, "Do not ask (needed when stdin is not a terminal)");
  cmd->footer(
      "Ends the session of each holder of NAME, as its lease's end would: every lock that\n"
      "session holds goes, waiters are granted on, and the holder is told it lost its lock at\n"
      "its next renewal. Refused on zk:// and in mode=advisory (another client's session\n"
      "cannot be ended there). Exit status: 0 done or already free, 64 usage (no --force; no\n"
      "--yes and no terminal), 69 backend unavailable or refusing, 75 not confirmed,\n"
      "77 permission denied.");
  cmd->callback([o, &status_out] { status_out = unlock(*o); });
}

}  // namespace dlock::cli
