#pragma once
// Redlock's view of one lock: N servers each keep their own queue (with their own scores),
// and an entry holds only where the recipe says so on a majority of them. This turns the
// per-server queues into the single queue_view the engine decides on. Pure; no I/O.
//
// Safety: an entry holds on a server only once the server stamped it, which it does only
// while no entry is ahead of it but those the recipe let stay there; nothing joins ahead of
// a stamped entry and entries never move (redis_scripts.cpp), so on each server at most one
// exclusive entry holds; two majorities share a server, so two exclusive entries never both
// hold on a majority.
// Liveness: servers may order concurrent enqueues differently, so it can happen that no entry
// holds on a majority (a "split"); then every own entry that holds somewhere but is not the
// split's winner (most servers, then smallest id) is re-queued at the back everywhere.

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "backends/redis/redis_scripts.hpp"

namespace dlock::detail::redis {

// An own entry that holds, with the token it reports: the largest of its grants, or one above
// the highest counter of any answering master (refusing ones too) if that is larger.
struct grant_check {
  std::string id;
  std::uint64_t token{0};
  std::vector<std::size_t> raise_on;  // answering servers whose counter is below the token
  std::size_t needed{0};              // how many of those raises must succeed (a majority in all)
  bool fresh{false};                  // granted by this listing (not settled before)
};

// An own entry without a grant on one server, and the entries ahead of it there that may
// stay ahead while it holds, as the recipe (decide) says on this listing. The next
// queue_script call on that server stamps its grant once no other entry is ahead of it. The
// decision stays true after this listing: on one server entries never move, so the script,
// which checks that every entry then ahead of it is one of these, sees a part of these in the
// same order, and an entry that holds with some entries ahead still holds with fewer of them
// (every recipe of verdict.hpp; an entry that holds keeps holding until it is removed). So
// the script stamps only an entry that holds there, and needs no recipe of its own.
struct stamp_request {
  std::string id;
  std::vector<std::string> may_stay_ahead;
};

// An election candidate's value seen on fewer than a majority of the masters where its entry
// is: written back to the others (set_value_at_script without a session) before it is
// reported, so that no reader reports a value a later reader could miss (a read with
// write-back, as in ABD registers). If too few confirm, the reader reports the fallback, the
// highest version a majority has.
struct value_repair {
  std::string id;
  std::string value;
  std::uint64_t version{0};
  std::vector<std::size_t> servers;  // the entry is there with a lower version
  std::size_t have{0};               // servers that have `version` already
  std::string fallback_value;
  std::uint64_t fallback_version{0};
};

// An election's term record, read on some masters and missing on others (a master restarted
// empty): written back, so that a record once reported stays on a majority (as values are).
struct term_repair {
  grant_check term;                  // the leader's entry id and its term's token
  std::vector<std::size_t> servers;  // answering masters without it
};

struct merge_result {
  std::vector<entry> entries;
  // Ahead of each own waiter that no one entry keeps off a majority (it holds on some
  // servers, or is missing from some), and of every own waiter in a split: the engine waits
  // for any change, which on Redlock is looking again shortly (session::wait_change).
  std::vector<unlisted_holder> unlisted;
  std::vector<std::pair<std::string, std::size_t>> wait_node;  // awaited id -> server index
  std::vector<std::string> resubmit;  // own ids to re-queue (split loser, or on too few servers)
  std::vector<grant_check> grants;    // own holders, with the token they report
  std::vector<value_repair> repairs;  // values of listed entries not yet on a majority
  std::optional<term_repair> term_fix;
  // Per server, indexed like views (empty where it did not answer): own entries to stamp.
  std::vector<std::vector<stamp_request>> stamps;
  // An own entry the recipe lets hold on a majority is stamped on fewer: a round with these
  // stamps would grant it, so the caller makes one at once rather than wait.
  bool restamp{false};
};

// The most entries a stamp_request names ahead (beyond it, it names none: the entry is
// stamped once it is first).
inline constexpr std::size_t max_stamp_ahead = 64;

// views[i] is server i's queue, or nullopt if it did not answer (or lost our session).
// `mine` are this session's entry ids in the lock (none: the whole queue, for status tools
// and observers); `settled` the tokens of own holders whose counters were already raised
// (reported as they are, with nothing to raise; in a whole view, the majority holder's).
merge_result merge_views(const std::vector<std::optional<node_view>>& views,
                         const std::set<std::string, std::less<>>& mine, std::size_t quorum,
                         const std::map<std::string, std::uint64_t, std::less<>>& settled = {});

}  // namespace dlock::detail::redis
