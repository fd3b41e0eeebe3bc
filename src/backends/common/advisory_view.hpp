#pragma once
// What a database tells status tools about one of its connection-bound native locks
// (PostgreSQL advisory locks, MariaDB GET_LOCK), for ?mode=advisory sessions: the
// connections holding it and the dlock sessions waiting, as the engine's queue view.

#include <algorithm>
#include <string>
#include <vector>

#include "core/backend.hpp"

namespace dlock::detail {

// A connection the server reports holding, or waiting for, a lock.
struct remote_conn {
  std::string id;           // the server's connection id (backend pid, CONNECTION_ID())
  std::string host;         // client "address:port", "local", or "unknown" when not shown
  std::string description;  // e.g. "connection 42, user dlock"
  bool shared{false};       // holds a shared lock
};

struct remote_view {
  std::vector<remote_conn> holders;
  std::vector<remote_conn> waiters;  // dlock sessions waiting (holding their "waiting" mark)
};

// The queue a status tool is shown for the server's lock `key`: an entry per connection, with
// an id per connection. Token 0: not known (another connection's token is in no server view).
// Waiters with no holder are about to take the lock: the server says it is free.
inline void add_observed(queue_view& v, const std::string& key, const remote_view& seen) {
  auto add = [&](const remote_conn& c, bool holds) {
    entry e;
    e.id = "advisory:" + key + ":" + c.id;
    e.kind = holds && c.shared ? entry_kind::shared : entry_kind::exclusive;
    e.owner = c.host + " " + c.description + ", advisory";
    v.entries.push_back(std::move(e));
  };
  for (const auto& c : seen.holders) add(c, true);
  if (seen.holders.empty()) return;
  for (const auto& c : seen.waiters) {
    if (std::ranges::none_of(seen.holders, [&](const auto& h) { return h.id == c.id; })) {
      add(c, false);
    }
  }
}

// Why a session cannot list lock names: the server stores locks by hash only, so it cannot
// name the locks other connections hold, and the names this session holds would be a list
// that looks complete and is not.
inline failure no_lock_names(const std::string& where) {
  return {make_error_code(errc::unsupported),
          where + ": mode=advisory cannot list locks: the server keeps only a hash of " +
              "each lock name (ask about one name: dlock status NAME)"};
}

}  // namespace dlock::detail
