// The queue script's replies (redis_scripts.hpp) parsed into one server's view of a queue.
#include <hiredis/hiredis.h>

#include <charconv>
#include <cstdint>
#include <unordered_map>

#include "backends/common/wire_time.hpp"
#include "backends/redis/redis_scripts.hpp"

namespace dlock::detail::redis {
namespace {

std::optional<std::uint64_t> to_u64(std::string_view s) {
  std::uint64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc{} || p != s.data() + s.size()) return std::nullopt;
  return v;
}

// Splits "a|b|...|rest" into `out` (its last field keeps any further '|': an owner may hold
// them); false if there are fewer fields.
template <std::size_t N>
bool split_fields(std::string_view text, std::string_view (&out)[N]) {
  for (std::size_t k = 0; k + 1 < N; ++k) {
    auto bar = text.find('|');
    if (bar == std::string_view::npos) return false;
    out[k] = text.substr(0, bar);
    text.remove_prefix(bar + 1);
  }
  out[N - 1] = text;
  return true;
}

// The stored fields both reply shapes carry: kind letter, session, creation time, grant.
void set_stored(node_entry& ne, std::string_view kind, std::string_view session,
                std::string_view created, std::string_view grant) {
  // 'p' (permit) and 'e' (candidate) are exclusive here: the engine reads them from ids.
  ne.e.kind = kind == "s" ? entry_kind::shared : entry_kind::exclusive;
  ne.session = std::string(session);
  if (auto ms = to_u64(created); ms && *ms <= INT64_MAX) {
    ne.e.since = unix_ms_time(static_cast<std::int64_t>(*ms));
  }
  if (auto g = to_u64(grant)) ne.grant = *g;
}

// A term record, "leader id|token" (term_text), into v; "" is none. False if malformed.
bool parse_term(const redisReply* r, node_view& v) {
  if (r->type != REDIS_REPLY_STRING) return false;
  std::string_view text = reply_text(r);
  if (text.empty()) return true;
  auto bar = text.rfind('|');
  if (bar == std::string_view::npos || bar == 0) return false;
  auto token = to_u64(text.substr(bar + 1));
  if (!token) return false;
  v.term.emplace(std::string(text.substr(0, bar)), *token);
  return true;
}

// A whole-queue listing, {4, counter, {id, score}..., {meta}..., {session, ttl}...,
// {candidate id, "version|value"}..., term record} (queue_text), into v; false if it has the
// wrong shape.
bool parse_listing(const redisReply* r, node_view& v) {
  auto is_array = [](const redisReply* x) { return x && x->type == REDIS_REPLY_ARRAY; };
  if (r->elements != 7 || r->element[1]->type != REDIS_REPLY_INTEGER) return false;
  if (!parse_term(r->element[6], v)) return false;
  const redisReply* pairs = r->element[2];
  const redisReply* metas = r->element[3];
  const redisReply* sessions = r->element[4];
  const redisReply* values = r->element[5];
  // An empty Lua table comes back as an empty array.
  if (!is_array(pairs) || !is_array(metas) || !is_array(sessions) || !is_array(values) ||
      pairs->elements != 2 * metas->elements || sessions->elements % 2 != 0 ||
      values->elements % 2 != 0)
    return false;
  v.counter = static_cast<std::uint64_t>(r->element[1]->integer);
  std::unordered_map<std::string_view, std::int64_t> ttl;
  for (std::size_t i = 0; i < sessions->elements; i += 2) {
    const redisReply* t = sessions->element[i + 1];
    if (t->type != REDIS_REPLY_INTEGER) return false;
    ttl.emplace(reply_text(sessions->element[i]), t->integer);
  }
  std::unordered_map<std::string_view, std::string_view> value_of;
  for (std::size_t i = 0; i < values->elements; i += 2)
    value_of.emplace(reply_text(values->element[i]), reply_text(values->element[i + 1]));
  v.entries.reserve(metas->elements + 1);
  for (std::size_t i = 0; i < metas->elements; ++i) {
    // "kind|session|created|grant|owner" (the owner may hold '|').
    std::string_view meta = reply_text(metas->element[i]);
    std::string_view field[5];
    if (!split_fields(meta, field)) return false;
    node_entry ne;
    ne.e.id = std::string(reply_text(pairs->element[2 * i]));
    auto token = to_u64(reply_text(pairs->element[2 * i + 1]));
    if (!token || ne.e.id.empty() || field[0].size() != 1) return false;
    ne.e.token = *token;
    set_stored(ne, field[0], field[1], field[2], field[3]);
    // A negative TTL (no expiry: -1) is unknown.
    if (auto t = ttl.find(field[1]); t != ttl.end() && t->second >= 0 && t->second <= INT32_MAX)
      ne.e.lease_left = std::chrono::milliseconds{t->second};
    ne.e.owner = std::string(field[4]);
    if (auto val = value_of.find(ne.e.id); val != value_of.end()) {
      // "version|value"
      // "version|value"; anything else reads as never set, as the scripts' value_of does.
      auto bar = val->second.find('|');
      auto version =
          bar == std::string_view::npos ? std::nullopt : to_u64(val->second.substr(0, bar));
      if (version && *version > 0) {
        ne.e.version = *version;
        ne.e.value = std::string(val->second.substr(bar + 1));
      }
    }
    v.entries.push_back(std::move(ne));
  }
  return true;
}

}  // namespace

result<node_view> parse_queue_reply(const target& where, const redisReply* r,
                                    const node_entry* sent, bool bump) {
  auto bad = [&](std::string_view why) {
    return fail(errc::protocol_error,
                where.where + ": malformed queue reply (" + std::string(why) + ")");
  };
  if (!r || r->type != REDIS_REPLY_ARRAY || r->elements < 1) return bad("not an array");
  node_view v;
  if (r->element[0]->type != REDIS_REPLY_INTEGER) return bad("status");
  if (r->element[0]->integer == 0) {
    v.session_alive = false;
    return v;
  }
  // 5: the entry had been removed for good before this enqueue arrived (a tombstone).
  if (r->element[0]->integer == 5) {
    return fail(errc::lock_lost, where.where + ": entry " + (sent ? sent->e.id : std::string("?")) +
                                     " was removed before its enqueue arrived");
  }
  // 2: the new entry holds alone; 3: it joined behind the one entry listed. Both replies
  // leave out the new entry itself: the client sent it.
  const auto status = r->element[0]->integer;
  std::optional<node_entry> added;
  std::size_t first = 2;
  if (status == 2 || status == 3) {
    if (!sent || r->elements < 3 || r->element[1]->type != REDIS_REPLY_INTEGER ||
        r->element[2]->type != REDIS_REPLY_INTEGER || r->element[1]->integer <= 0 ||
        (status == 2) != (r->elements == 3))
      return bad("new entry");
    added = *sent;
    added->e.token = static_cast<std::uint64_t>(r->element[1]->integer);
    if (status == 2 && bump) added->grant = added->e.token;
    if (r->element[2]->integer >= 0)
      added->e.lease_left = std::chrono::milliseconds{r->element[2]->integer};
    v.lone = status == 2;
    first = 3;
  }
  if (status == 4) {
    if (!parse_listing(r, v)) return bad("listing");
    return v;
  }
  // A lone candidate's listing on Redlock ends with the term record: {1, counter, entry,
  // value, term}.
  std::size_t end = r->elements;
  if (status == 1 && end == 5) {
    if (!parse_term(r->element[4], v)) return bad("term record");
    end = 4;
  }
  if (end < first || (end - first) % 2 != 0) return bad("length");
  v.counter = static_cast<std::uint64_t>(r->element[1]->integer);
  for (std::size_t i = first; i < end; i += 2) {
    // "id|token|kind|session|created|grant|ttl|version|owner" (the owner may hold '|'), value.
    std::string_view packed = reply_text(r->element[i]);
    std::string_view field[9];
    if (!split_fields(packed, field)) return bad("entry");
    node_entry ne;
    ne.e.id = std::string(field[0]);
    auto token = to_u64(field[1]);
    if (!token || ne.e.id.empty()) return bad("token");
    ne.e.token = *token;
    set_stored(ne, field[2], field[3], field[4], field[5]);
    // A negative TTL (no expiry: -1) is unknown; to_u64 refuses it.
    if (auto ttl = to_u64(field[6]); ttl && *ttl <= INT32_MAX) {
      ne.e.lease_left = std::chrono::milliseconds{static_cast<std::int64_t>(*ttl)};
    }
    auto version = to_u64(field[7]);
    if (!version) return bad("version");
    ne.e.version = *version;
    ne.e.owner = std::string(field[8]);
    if (*version > 0) ne.e.value = std::string(reply_text(r->element[i + 1]));
    v.entries.push_back(std::move(ne));
  }
  if (added) v.entries.push_back(std::move(*added));
  return v;
}

}  // namespace dlock::detail::redis
