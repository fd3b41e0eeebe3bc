#pragma once
// The Lua scripts (run by EVALSHA, reloaded on NOSCRIPT) and the parsing of their replies.
//
// Keys under the prefix P (lock names reach Redis only as KEYS/ARGV):
//   P s:<session>  string, PX ttl: the session's lease; value = owner text
//   P q:<lock>     sorted set: entry id -> score (the token assigned at enqueue)
//   P m:<lock>     hash: entry id -> "kind|session|created_ms|grant|owner"
//   P h:<lock>     string: the lock's gate. Absent: free. "id|token|meta": a lone holder,
//                  kept in this one key (one SET NX acquires, one DEL releases); "q": the
//                  queue below is in use. A second entry first moves a lone holder into q/m;
//                  nothing moves back, and the last entry to leave the queue DELs h.
//   P f:<lock>     counter: the lock's fencing counter; never expires (see README)
//   P w:<entry>    list: one wake token for the waiters of a removed entry (if an entry was
//                  behind it), PX-expiring. Waiters block on it with BLMOVE w w (a rotation
//                  that leaves the token for the others), so one token wakes all of them. It
//                  is a fact, not a verdict: 'h' when the entry was at the head of the queue
//                  as it went (every entry ahead of it had gone), else '1'
// Layout 2 adds, for semaphores and elections (keys an older client never reads or writes;
// the kinds 'p' and 'e' read as exclusive to it, so it waits behind them):
//   m's kind       'x' exclusive, 's' shared, 'p' a semaphore's permit, 'e' an election's
//                  candidate (the engine reads the limit / candidacy from the entry id)
//   P v:<lock>     hash: candidate entry id -> "version|value" (set_value_at_script); goes
//                  with the entry
//   P r:<entry>    set: inboxes registered on a permit entry (watch_script), PX-expiring;
//                  its removal pushes one token to each and deletes the set
//   P o:<lock>     set: observers' inboxes (observe_script), PX-expiring; a candidate's
//                  arrival, removal or set_value pushes to each and deletes the set
//   P i:<session>:<n>  list: one waiter's inbox (BLPOP), PX-expiring
// No script decides who holds from these: the woken client lists and the recipe decides.
// An entry lives while its session key does; scripts purge entries of vanished sessions.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "backends/redis/redis_conn.hpp"
#include "core/backend.hpp"

namespace dlock::detail::redis {

struct lua_script {
  std::string_view name;
  std::string_view text;
};

// KEYS q m f s_own h v o t; ARGV add_id "kind|sid|created|" owner bump at_least prefix wake_ttl
// (own_id n ahead_1..ahead_n)...: on a free lock, makes add_id its lone holder and returns
// {2, token, own ttl}; behind a live tail (one server, exclusive) it returns {3, token, own
// ttl, the tail entry}; otherwise purges dead entries (waking their waiters), adds add_id
// unless present (or returns {0} if the own session key is gone), with bump=1 (Redlock) at
// the lock's epoch rather than a fresh token (a candidate aside), assigns a grant number to
// each named own entry that has none and has no entry ahead of it but its named ones (the
// client decided it holds then) and to the added entry if it is first, and returns {4,
// counter, {id, score}..., {"kind|sid|created|grant|owner"}..., {sid, ttl}..., {candidate,
// "version|value"}...}, term record}. A lone holder's listing is {1, counter, entry, value
// [, term record]}, the entry as "id|token|kind|session|created|grant|ttl|version|owner". The
// term record (Redlock; t:<lock>, "" if none) is "leader id|token" (term_script).
extern const lua_script queue_script;
// KEYS (q m h v o)... s_own; ARGV prefix wake_ttl sid drop_session (id where)...: removes own
// entries (one per key triple; where = 'q' if known to be queued, 'l' if it may be a lone
// holder), pushes each one's wake token (w:, or r: for a permit), optionally DELs s_own.
// Returns how many it removed, or 0 when s_own was already gone (an operator's force_unlock)
// and not being dropped.
extern const lua_script release_script;
// KEYS f, floor (<prefix>fence-floor); ARGV x: raises the fencing counter, and the floor of every
// counter (queue_script), to at least x; returns the counter.
extern const lua_script raise_script;
// Redlock elections. KEYS f floor t m h o; ARGV token id wake_ttl: raises the counter as
// raise_script does, then records "id|token" as the term in t:<lock> if entry `id` is here and
// no higher term is recorded (waking the observers). 1: recorded (or already was); 0: the
// entry is gone; -1: a higher term is recorded.
extern const lua_script term_script;
// KEYS h s_own; ARGV id: DELs h if it holds entry `id` as a lone holder (ids begin with their
// session's id, so this is the owner check); 1 if it did, 2 if it did but s_own was gone (an
// operator's force_unlock: the hold had been lost), else 0 (then release_script).
extern const lua_script release_lone_script;
// KEYS m h v o s_own t; ARGV id value version wake_ttl sid term: stores `value` under
// the client's `version` unless the master has that version or a higher one; with sid, only on
// that session's live entry (the owner's set), without (a reader's write-back) on the entry
// if present. With a term token, records "id|term" in t:<lock> unless a term as high is
// recorded (term_script). Returns the version the master now has, or -1 if the entry (or
// session) is gone.
extern const lua_script set_value_at_script;
// KEYS m h; ARGV prefix ttl inbox ids...: registers inbox on every awaited entry (1), or 0
// at once when one of them is gone or its session has ended.
extern const lua_script watch_script;
// KEYS o; ARGV inbox ttl: registers an observer's inbox for the lock's next change.
extern const lua_script observe_script;

// The kind letter stored for an entry of `kind` with id `id` (the layout above).
char stored_kind(entry_kind kind, std::string_view id);

// One entry as one server stores it.
struct node_entry {
  entry e;  // token = the server's score
  std::string session;
  std::optional<std::uint64_t> grant;  // Redlock: the server's grant number, once it held
};

struct node_view {
  bool session_alive{true};  // false: the own session key is gone on this server
  bool lone{false};          // the new entry holds alone, stored in the gate key h:<lock>
  std::uint64_t counter{0};
  std::vector<node_entry> entries;
  // Redlock: the term record the listing read, if any: the leader's entry id and its token.
  std::optional<std::pair<std::string, std::uint64_t>> term;
};

// Parses a queue_script reply; protocol_error if it has the wrong shape. A lone-holder reply
// ({2, token, own ttl}) becomes `sent` (the entry the request added) with that token, and
// with bump (Redlock) that token as its grant; a joined-the-tail reply ({3, token, own ttl,
// the tail entry}) becomes [tail, sent]. Without `sent` both are malformed.
result<node_view> parse_queue_reply(const target& where, const redisReply* r,
                                    const node_entry* sent = nullptr, bool bump = false);

}  // namespace dlock::detail::redis
