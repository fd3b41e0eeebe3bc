// dlock doctor [URL] [--url URL] [--json] [--require G,...]: which guarantees hold in the
// configuration the backend actually has (dlock::diagnose), and why.
#include <algorithm>
#include <dlock/doctor.hpp>
#include <iomanip>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "cli/queue_format.hpp"

namespace dlock::cli {
namespace {

struct doctor_options {
  std::string url_arg;
  std::string url;
  bool json{false};
  std::string require;
};

// --require's list, checked against the guarantee names; "all" means every one.
std::vector<std::string> required_guarantees(const std::string& text) {
  const auto& known = dlock::guarantee_names();
  std::vector<std::string> out;
  std::stringstream in(text);
  std::string name;
  while (std::getline(in, name, ',')) {
    if (name.empty()) continue;
    if (name == "all") {
      out = known;
      continue;
    }
    if (std::ranges::find(known, name) == known.end()) {
      std::string list;
      for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
      throw cli_error(exit_usage,
                      "--require: unknown guarantee '" + name + "' (want " + list + " or all)");
    }
    if (std::ranges::find(out, name) == out.end()) out.push_back(name);
  }
  if (!text.empty() && out.empty()) throw cli_error(exit_usage, "--require names no guarantee");
  return out;
}

struct report {
  std::string url;
  std::string refused;  // non-empty: session::open refused the set-up (unsupported)
  dlock::diagnosis d;
};

report examine(const std::string& where) {
  report r{where, {}, {}};
  // A database that does not exist yet is created as its first use would; an existing one is
  // only looked at, so a user who may only read it can run doctor too.
  dlock::session_options opts{.description = "dlock doctor",
                              .observe_only = !sqlite_file_missing(where)};
  dlock::session s;
  try {
    s = dlock::session::open(where, opts);
  } catch (const std::system_error& e) {
    if (e.code() != make_error_code(dlock::errc::unsupported)) rethrow_as_cli_error();
    r.refused = tidy(e);
    if (r.refused.starts_with("dlock: ")) r.refused.erase(0, 7);
    // Nothing holds on a set-up that is refused: every guarantee says so.
    for (const auto& name : dlock::guarantee_names()) {
      r.d.guarantees.push_back(
          {name, dlock::guarantee_title(name), dlock::guarantee_status::no, "refused at open"});
    }
    return r;
  }
  try {
    r.d = dlock::diagnose(s);
    r.url = s.url();
  } catch (...) {
    s.close();
    rethrow_as_cli_error();
  }
  s.close();
  return r;
}

bool holds(const report& r, const std::string& name) {
  for (const auto& g : r.d.guarantees) {
    if (g.name == name) return g.status == dlock::guarantee_status::holds;
  }
  return false;
}

void print_json(const report& r, const std::vector<std::string>& required, bool ok,
                const std::string& error = {}) {
  nlohmann::json j;
  j["version"] = json_schema_version;
  j["url"] = r.url;
  j["refused"] = r.refused.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.refused);
  j["error"] = error.empty() ? nlohmann::json(nullptr) : nlohmann::json(error);
  j["guarantees"] = nlohmann::json::array();
  for (const auto& g : r.d.guarantees) {
    j["guarantees"].push_back({{"name", g.name},
                               {"title", g.title},
                               {"status", to_string(g.status)},
                               {"holds", g.status == dlock::guarantee_status::holds},
                               {"why", g.why}});
  }
  j["checks"] = nlohmann::json::array();
  for (const auto& c : r.d.checks) {
    j["checks"].push_back({{"check", c.check},
                           {"guarantee", c.guarantee},
                           {"status", to_string(c.status)},
                           {"reason", c.reason},
                           {"value", c.value}});
  }
  j["required"] = required;
  j["ok"] = ok;
  std::cout << j.dump(2) << '\n';
}

void print_text(const report& r, const std::vector<std::string>& required) {
  std::cout << r.url << '\n';
  if (!r.refused.empty()) {
    std::cout << "  REFUSED at open: " << r.refused << '\n';
    return;
  }
  std::size_t width = 0;
  for (const auto& g : r.d.guarantees) width = std::max(width, g.name.size());
  for (const auto& g : r.d.guarantees) {
    bool asked = std::ranges::find(required, g.name) != required.end();
    std::cout << (asked ? "* " : "  ") << std::left << std::setw(static_cast<int>(width) + 2)
              << g.name << std::setw(10) << to_string(g.status) << g.why << '\n';
  }
  if (r.d.checks.empty()) return;
  width = 0;
  for (const auto& c : r.d.checks) width = std::max(width, c.check.size());
  std::cout << "checks:\n";
  for (const auto& c : r.d.checks) {
    std::cout << "  " << std::left << std::setw(static_cast<int>(width) + 2) << c.check
              << std::setw(10) << to_string(c.status) << (c.value.empty() ? "-" : c.value) << '\n';
    // What to do about a finding is in its reason: not only in --json.
    if (c.status != dlock::check_status::ok && !c.reason.empty())
      std::cout << "  " << std::string(width + 2, ' ') << "  " << c.reason << '\n';
  }
}

int doctor(const doctor_options& o) {
  if (!o.url_arg.empty() && !o.url.empty() && o.url_arg != o.url) {
    throw cli_error(exit_usage, "two different URLs: give it as URL or as --url, not both");
  }
  auto required = required_guarantees(o.require);
  auto where = resolve_url(o.url_arg.empty() ? o.url : o.url_arg);
  report r;
  try {
    r = examine(where);
  } catch (const cli_error& e) {
    // A script reading --json gets a document that says why, not empty input (a tester).
    if (o.json && e.code() != exit_usage) {
      r.url = where;
      std::string why = e.what();
      if (why.starts_with("dlock: ")) why.erase(0, 7);
      print_json(r, required, false, why);
    }
    throw;
  }
  // A finding unsafe for no guarantee in particular: this client cannot use the set-up.
  const bool unusable = std::ranges::any_of(r.d.checks, [](const dlock::check_finding& c) {
    return c.status == dlock::check_status::unsafe && c.guarantee.empty();
  });
  bool ok = r.refused.empty() && !unusable &&
            std::ranges::all_of(required, [&](const std::string& g) { return holds(r, g); });
  if (o.json) {
    print_json(r, required, ok);
  } else {
    print_text(r, required);
  }
  return ok ? exit_ok : exit_doctor_unmet;
}

}  // namespace

void add_doctor_command(CLI::App& app, int& status) {
  auto o = std::make_shared<doctor_options>();
  auto* cmd = app.add_subcommand(
      "doctor", "Check which guarantees hold with this backend's configuration, and why");
  cmd->add_option("URL", o->url_arg, "The backend (else --url, $DLOCK_URL or the default)");
  add_url_option(cmd, o->url);
  cmd->add_flag("--json", o->json, "Print JSON for scripts");
  // An empty value (an unset variable: --require "$GUARANTEES") is refused, as for durations:
  // a check that requires nothing passes whatever the backend guarantees.
  cmd->add_option("--require", o->require,
                  "Guarantees that must hold, comma-separated: exclusion, fencing, failover, "
                  "loss-signal, fifo, shared, semaphores, elections, interop, or all")
      ->check([](const std::string& v) {
        return v.empty() ? std::string("an empty value names no guarantee (want names, or all)")
                         : std::string();
      });
  cmd->footer(
      "Exit status: 0 every --require'd guarantee holds, 1 one does not (or the set-up is\n"
      "refused at open), 64 usage, 69 backend unavailable, 77 permission denied.");
  cmd->callback([o, &status] { status = doctor(*o); });
}

}  // namespace dlock::cli
