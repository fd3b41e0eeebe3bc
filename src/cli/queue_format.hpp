#pragma once
// How `dlock status` and `dlock list` show queue entries: one human line, or a JSON object.

#include <dlock/inspect.hpp>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace dlock::cli {

// The parts of queue_entry::owner ("host pid=N description").
struct owner_parts {
  std::string host;
  long long pid{0};  // 0 when the owner text has none
  std::string description;
};
owner_parts parse_owner(const std::string& owner);

// {"token", "host", "pid", "owner", "description", "since", "since_ms", "lease_left_ms",
// "shared"}; absent facts (also a token the backend does not know) are null.
nlohmann::json entry_json(const dlock::queue_entry& e);

// "token 12  host-a pid 4242 (dlock run make)  since 2024-05-01 12:00:03 (12s ago)  lease 14.2s"
std::string entry_line(const dlock::queue_entry& e);

// Holders first, then waiters in order, as the library returns them.
struct queue_split {
  std::vector<dlock::queue_entry> holders;
  std::vector<dlock::queue_entry> waiters;
};
queue_split split_queue(const std::vector<dlock::queue_entry>& q);

}  // namespace dlock::cli
