#include "cli/leader_format.hpp"

#include <fmt/format.h>

#include "cli/queue_format.hpp"

namespace dlock::cli {

nlohmann::json leader_json(const std::optional<dlock::leader_info>& l) {
  if (!l) return nullptr;
  auto o = parse_owner(l->owner);
  nlohmann::json j;
  j["value"] = l->value;
  j["token"] = l->token.value;
  // Not "version": the documents that carry a leader have their schema's version at the top.
  j["value_version"] = l->version;
  j["owner"] = l->owner;
  j["host"] = o.host;
  j["pid"] = o.pid > 0 ? nlohmann::json(o.pid) : nlohmann::json(nullptr);
  auto here = running_here(o);
  j["pid_running_here"] = here ? nlohmann::json(*here) : nlohmann::json(nullptr);
  j["description"] = o.description;
  if (l->since) {
    j["since"] = iso_utc(*l->since);
    j["since_ms"] =
        std::chrono::duration_cast<std::chrono::milliseconds>(l->since->time_since_epoch()).count();
  } else {
    j["since"] = nullptr;
    j["since_ms"] = nullptr;
  }
  return j;
}

std::string leader_line(const dlock::leader_info& l, bool age) {
  auto o = parse_owner(l.owner);
  std::string line = fmt::format("{}  token {}  version {}  {}", quoted_value(l.value),
                                 l.token.value, l.version, control_escaped(o.host));
  if (o.pid > 0) line += fmt::format(" pid {}", o.pid);
  if (running_here(o) == false) line += " (pid not running here)";
  if (!o.description.empty()) line += fmt::format(" ({})", control_escaped(o.description));
  if (l.since) line += "  " + (age ? since_text(*l.since) : "since " + local_time(*l.since));
  return line;
}

std::string quoted_value(std::string_view v) {
  std::string out = "\"";
  for (char c : v) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return control_escaped(out) + "\"";
}

std::string dump_json(const nlohmann::json& j, int indent) {
  return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace dlock::cli
