#pragma once
// How `dlock status` and `dlock list` show queue entries: one human line, or a JSON object;
// the owner and time formats are shared with leader_format.

#include <chrono>
#include <cstdint>
#include <dlock/inspect.hpp>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dlock::cli {

// The parts of queue_entry::owner ("host pid=N description").
struct owner_parts {
  std::string host;
  long long pid{0};  // 0 when the owner text has none
  // The holder's PID namespace (its "pidns=" word, written only outside the initial one);
  // 0: the initial namespace, or an owner text from before 2026-12-07.
  std::uint64_t pidns{0};
  std::string description;
};
owner_parts parse_owner(const std::string& owner);

// True/false for an owner on this host (its process exists or not), nullopt elsewhere: a
// holder whose process is gone here is worth a second look (a stuck lease, a pid reused).
std::optional<bool> running_here(const owner_parts& o);
// True for an entry this very process created (same host, same pid).
bool this_process(const owner_parts& o);

// "2026-12-01T07:32:40.123Z": JSON times are UTC.
std::string iso_utc(std::chrono::system_clock::time_point t);
// "2026-12-01 08:32:40 CET": human output in local time, with the zone.
std::string local_time(std::chrono::system_clock::time_point t);
// "since 2026-12-01 08:32:40 CET (12s ago)".
std::string since_text(std::chrono::system_clock::time_point t);

// {"token", "host", "pid", "pid_running_here", "owner", "description", "since", "since_ms",
// "lease_left_ms", "shared"}; absent facts (also a token the backend does not know) are null.
// pid_running_here is false for an owner on this host whose process is gone, null elsewhere.
nlohmann::json entry_json(const dlock::queue_entry& e);

// `v` with control characters written as \n, \t, \r or \xNN: text from a server (an owner's
// command line, another client's host or lock name) must not break or forge a line of the
// human output, nor drive the terminal.
std::string control_escaped(std::string_view v);

// "token 12  host-a pid 4242 (dlock run make)  since 2024-05-01 12:00:03 (12s ago)  lease 14.2s"
std::string entry_line(const dlock::queue_entry& e);

// The JSON schema of `dlock status --json` and `dlock list --json` (docs/json.md).
constexpr int json_schema_version = 2;

// Holders first, then waiters in order, as the library returns them.
struct queue_split {
  std::vector<dlock::queue_entry> holders;
  std::vector<dlock::queue_entry> waiters;
};
queue_split split_queue(const std::vector<dlock::queue_entry>& q);

}  // namespace dlock::cli

namespace dlock::cli {
// {"name", "held", "holders": [entry_json...], "waiters": [entry_json...]}: one lock, the same
// object in `status --json` and in `list --json`'s "locks".
nlohmann::json lock_json(const std::string& name, const queue_split& q);
}  // namespace dlock::cli
