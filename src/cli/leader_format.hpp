#pragma once
// How `dlock leader`, `dlock observe` and `dlock elect`'s conflict message show an election's
// leader: one human line, or a JSON object (docs/json.md).

#include <dlock/election.hpp>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace dlock::cli {

// {"value", "token", "value_version", "owner", "host", "pid", "pid_running_here",
// "description", "since", "since_ms"}; null for no leader.
nlohmann::json leader_json(const std::optional<dlock::leader_info>& l);

// "\"web1:8080\"  token 42  version 1  web1 pid 1234 (dlock elect ./serve)  since 2026-12-01
// 08:32:40 CET (3s ago)"; the age only with `age`.
std::string leader_line(const dlock::leader_info& l, bool age = true);

// `v` in double quotes on one line: a value is any bytes, and one change must stay one line
// for a reader of `dlock observe`. `"`, `\` and control characters are escaped as in C.
std::string quoted_value(std::string_view v);

// j.dump(indent), with bytes that are not UTF-8 replaced (U+FFFD) instead of throwing: a value
// is any bytes.
std::string dump_json(const nlohmann::json& j, int indent = -1);

}  // namespace dlock::cli
