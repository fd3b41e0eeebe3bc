#include "cli/queue_format.hpp"

#include <fmt/chrono.h>
#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdint>
#include <ctime>
#include <optional>
#include <string>

#include "core/duration.hpp"
#include "core/names.hpp"
#include "core/pid_namespace.hpp"

namespace dlock::cli {
namespace {
using sys_clock = std::chrono::system_clock;
}  // namespace

std::string iso_utc(sys_clock::time_point t) {
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
  std::time_t secs = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  return fmt::format("{:%Y-%m-%dT%H:%M:%S}.{:03d}Z", tm, static_cast<int>(ms % 1000));
}

std::string local_time(sys_clock::time_point t) {
  std::time_t secs = sys_clock::to_time_t(t);
  std::tm tm{};
  localtime_r(&secs, &tm);
  // With the zone: an operator comparing hosts in different zones must not guess.
  return fmt::format("{:%Y-%m-%d %H:%M:%S %Z}", tm);
}

namespace {

// An owner on this host, as the session that made it names hosts (session_core's owner_text).
bool on_this_host(const owner_parts& o) {
  char host[256] = {};
  return gethostname(host, sizeof host - 1) == 0 && o.host == host;
}

}  // namespace

std::optional<bool> running_here(const owner_parts& o) {
  if (o.pid <= 0 || !on_this_host(o)) return std::nullopt;
  // A pid means one process only in its own namespace: from another (a container sharing the
  // host's name, `unshare --pid`) the holder may run unseen, or its pid be another process's.
  // A tester's nested view marked a live holder "(pid not running here)".
  const auto mine = dlock::detail::pid_namespace();
  const auto theirs = o.pidns != 0 ? o.pidns : dlock::detail::initial_pid_namespace;
  if (mine == 0 ? o.pidns != 0 : mine != theirs) return std::nullopt;
  return ::kill(static_cast<pid_t>(o.pid), 0) == 0 || errno == EPERM;
}

bool this_process(const owner_parts& o) { return o.pid == ::getpid() && on_this_host(o); }

std::string since_text(sys_clock::time_point t) {
  auto age = std::chrono::duration_cast<std::chrono::milliseconds>(sys_clock::now() - t);
  return fmt::format("since {} ({} ago)", local_time(t),
                     dlock::detail::format_duration(std::max(age, std::chrono::milliseconds{0})));
}

owner_parts parse_owner(const std::string& owner) {
  owner_parts p;
  auto space = owner.find(' ');
  p.host = owner.substr(0, space);
  if (space == std::string::npos) return p;
  std::string_view rest = std::string_view(owner).substr(space + 1);
  if (rest.starts_with("pid=")) {
    rest.remove_prefix(4);
    auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), p.pid);
    if (ec != std::errc{}) p.pid = 0;
    rest = std::string_view(end, rest.data() + rest.size() - end);
    if (rest.starts_with(' ')) rest.remove_prefix(1);
    if (rest.starts_with("pidns=")) {
      auto [ns_end, ns_ec] = std::from_chars(rest.data() + 6, rest.data() + rest.size(), p.pidns);
      if (ns_ec == std::errc{} && (ns_end == rest.data() + rest.size() || *ns_end == ' ')) {
        rest = std::string_view(ns_end, rest.data() + rest.size() - ns_end);
        if (rest.starts_with(' ')) rest.remove_prefix(1);
      } else {
        p.pidns = 0;
      }
    }
  }
  p.description = std::string(rest);
  return p;
}

nlohmann::json entry_json(const dlock::queue_entry& e) {
  auto o = parse_owner(e.owner);
  nlohmann::json j;
  // Token 0: the backend does not know it (another connection's advisory lock).
  j["token"] = e.token != 0 ? nlohmann::json(e.token) : nlohmann::json(nullptr);
  j["owner"] = e.owner;
  j["host"] = o.host;
  j["pid"] = o.pid > 0 ? nlohmann::json(o.pid) : nlohmann::json(nullptr);
  auto here = running_here(o);
  j["pid_running_here"] = here ? nlohmann::json(*here) : nlohmann::json(nullptr);
  j["description"] = o.description;
  j["shared"] = e.shared;
  j["permits"] = e.permits != 0 ? nlohmann::json(e.permits) : nlohmann::json(nullptr);
  j["candidate"] = e.candidate;
  if (e.since) {
    j["since"] = iso_utc(*e.since);
    j["since_ms"] =
        std::chrono::duration_cast<std::chrono::milliseconds>(e.since->time_since_epoch()).count();
  } else {
    j["since"] = nullptr;
    j["since_ms"] = nullptr;
  }
  j["lease_left_ms"] = e.lease_left ? nlohmann::json(e.lease_left->count()) : nullptr;
  return j;
}

std::string control_escaped(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) {
    const char c = v[i];
    const auto u = static_cast<unsigned char>(c);
    const auto next = i + 1 < v.size() ? static_cast<unsigned char>(v[i + 1]) : 0;
    if (u == 0xC2 && next >= 0x80 && next < 0xA0) {
      out += fmt::format("\\u{:04x}", next);  // a C1 control (U+009B starts an escape sequence)
      ++i;
    } else if (auto cp = dlock::detail::bidi_control_at(v, i)) {
      // Reorders the text shown around it: one name could pass for another.
      out += fmt::format("\\u{:04x}", static_cast<std::uint32_t>(cp));
      i += cp == 0x061C ? 1 : 2;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\r') {
      out += "\\r";
    } else if (u < 0x20 || u == 0x7f) {
      out += fmt::format("\\x{:02x}", u);
    } else {
      out += c;
    }
  }
  return out;
}

std::string entry_line(const dlock::queue_entry& e) {
  auto o = parse_owner(e.owner);
  std::string line = e.token != 0 ? fmt::format("token {}  {}", e.token, control_escaped(o.host))
                                  : "token unknown  " + control_escaped(o.host);
  if (o.pid > 0) line += fmt::format(" pid {}", o.pid);
  if (running_here(o) == false) line += " (pid not running here)";
  if (!o.description.empty()) line += fmt::format(" ({})", control_escaped(o.description));
  if (e.shared) line += "  shared";
  if (e.permits != 0) line += fmt::format("  permit of {}", e.permits);
  if (e.candidate) line += "  candidate";
  if (e.since) line += "  " + since_text(*e.since);
  if (e.lease_left) line += "  lease " + dlock::detail::format_duration(*e.lease_left);
  return line;
}

queue_split split_queue(const std::vector<dlock::queue_entry>& q) {
  queue_split s;
  for (const auto& e : q) (e.holds ? s.holders : s.waiters).push_back(e);
  return s;
}

}  // namespace dlock::cli

namespace dlock::cli {
nlohmann::json lock_json(const std::string& name, const queue_split& q) {
  nlohmann::json j;
  j["name"] = name;
  j["held"] = !q.holders.empty();
  j["holders"] = nlohmann::json::array();
  for (auto& e : q.holders) j["holders"].push_back(entry_json(e));
  j["waiters"] = nlohmann::json::array();
  for (auto& e : q.waiters) j["waiters"].push_back(entry_json(e));
  return j;
}
}  // namespace dlock::cli
