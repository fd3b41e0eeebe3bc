#include "backends/redis/redis_scripts.hpp"

#include <cstdint>

#include "backends/redis/redis_lua_common.hpp"

namespace dlock::detail::redis {
namespace {

constexpr std::string_view queue_text = R"lua(
-- One entry of the reply in one string (a reply element costs the server more than a few
-- concatenations): "id|token|kind|session|created|grant|ttl|version|owner", its value apart.
local function pack(id, token, kind, sid, created, grant, ttl, version, owner)
  return id .. '|' .. token .. '|' .. kind .. '|' .. sid .. '|' .. created .. '|' .. grant ..
         '|' .. string.format('%d', ttl) .. '|' .. version .. '|' .. owner
end
local q, m, f, own, h, v, o, term = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6],
                                     KEYS[7], KEYS[8]
-- The uncontended path reads only the first five arguments and converts none to a number:
-- in a script this short, argument handling is a good part of the server's work.
local add_id, head, owner, bump = ARGV[1], ARGV[2], ARGV[3], ARGV[4] == '1'
local function next_token()
  if ARGV[5] ~= '0' then
    local at_least = tonumber(ARGV[5])
    local c = tonumber(redis.call('GET', f) or '0')
    if c < at_least then redis.call('SET', f, ARGV[5]) end
  end
  local t = redis.call('INCR', f)
  -- The floor is at least every token this database gave (any lock): a counter that starts
  -- again (its key deleted by hand with the lock's others, a clean-up script's pattern) goes on
  -- above it, so a holder whose keys were deleted never shares or outranks the next one's token.
  local floor_key = ARGV[6] .. 'fence-floor'
  local low = tonumber(redis.call('GET', floor_key) or '0')
  if t == 1 and low > 0 then
    t = low + 1
    redis.call('SET', f, t)
  end
  if t > low then redis.call('SET', floor_key, t) end
  return t
end
-- Redlock places a queued entry at the lock's epoch: one above its
-- counter, which moves only when an entry is granted (stamped below) or the counter raised.
-- Entries that join between two grants share one score, so every master orders them by id:
-- a burst of enqueues reaches the masters in different orders, yet is queued in one order on
-- all of them (in arrival order, the heads differed and each handoff was a split to
-- resolve). Nothing ever joins ahead of a stamped entry: its grant, at least its score, is
-- at most the counter. A counter deleted by hand starts from the floor (as next_token does).
-- An election's candidates too: observers take a term's token from the term record the leader
-- writes (term_script), not from places, which two leaders of one burst share.
local function epoch()
  local c = tonumber(redis.call('GET', f) or '0')
  if c == 0 then c = tonumber(redis.call('GET', ARGV[6] .. 'fence-floor') or '0') end
  return c + 1
end
-- h is the gate: absent = the lock is free; a lone holder = "id|token|meta", stored in this
-- one key instead of the sorted set and hash; 'q' = the queue (q, m) is in use. A second
-- entry moves a lone holder into the queue first, so a SET NX of h can only succeed on a
-- free lock. The new entry's place is taken first either way.
local t, ts, own_ttl
local old = false
if add_id ~= '' then
  own_ttl = redis.call('PTTL', own)
  if own_ttl == -2 then return {0} end
  -- Removed already: this enqueue is one its client gave up on, delivered late (a slow link);
  -- added now, it would be held for nobody for as long as the session lives.
  if redis.call('SISMEMBER', ARGV[6] .. 'g:' .. string.sub(own, #ARGV[6] + 3), add_id) == 1 then
    return {5}
  end
  if bump then old = redis.call('GET', h) end
  if old then
    t = epoch()
    ts = string.format('%d', t)
  else
    t = next_token()
    ts = string.format('%d', t)
    -- The uncontended case: the new entry is alone, where every recipe holds (the client
    -- names it with nothing allowed ahead, see below), so its grant is its own fresh token
    -- (above every token this server gave before, like a grant assigned later would be).
    local g = bump and ts or ''
    old = redis.call('SET', h, add_id .. '|' .. ts .. '|' .. head .. g .. '|' .. owner, 'NX', 'GET')
    if not old then
      push_all(o, ARGV[7])  -- observers look (an empty set when nobody observes: no cost)
      return {2, t, own_ttl}  -- the client knows the rest of the entry: it sent it
    end
  end
else
  old = redis.call('GET', h)
  if old and old ~= 'q' then
    -- Listing a lone holder (status tools, a waiter's re-check) reads it and changes nothing.
    local out = {1, tonumber(redis.call('GET', f) or '0')}
    local e = {string.match(old, '^([^|]+)|(%d+)|(%a)|(%x+)|(%d*)|(%d*)|(.*)$')}
    if e[1] then
      e[8] = redis.call('PTTL', ARGV[6] .. 's:' .. e[4])
      if e[8] ~= -2 then
        local val, ver = '', '0'
        if e[3] == 'e' then val, ver = value_of(redis.call('HGET', v, e[1])) end
        out[3] = pack(e[1], e[2], e[3], e[4], e[5], e[6], e[8], ver, e[7])
        out[4] = val
        -- Redlock: the term record, "leader id|token", for an election's observers.
        if bump and e[3] == 'e' then out[5] = redis.call('GET', term) or '' end
      end
    end
    return out
  end
end
local prefix, wake_ttl = ARGV[6], ARGV[7]
local add_kind, add_sid, add_created = string.match(head, '^(%a)|(%x+)|(%d*)|$')
if old and old ~= 'q' then
  local id, score, meta = string.match(old, '^([^|]+)|(%d+)|(.*)$')
  if id then
    redis.call('ZADD', q, score, id)
    redis.call('HSET', m, id, meta)
  end
  redis.call('SET', h, 'q')
end
-- One server, an exclusive entry joining a live tail: it waits on that tail, whatever is
-- ahead of it, so only the tail is read (the reply is the partial view [tail, new]; the
-- client decides from it). Anything else (a dead tail, a retry, shared, Redlock) takes the
-- full path.
if add_id ~= '' and not bump and add_kind == 'x' then
  local tail = redis.call('ZRANGE', q, -1, -1, 'WITHSCORES')
  local tmeta = tail[1] and tail[1] ~= add_id and redis.call('HGET', m, tail[1])
  local k, s, c, g, ow
  if tmeta then k, s, c, g, ow = string.match(tmeta, '^(%a)|(%x+)|(%d*)|(%d*)|(.*)$') end
  local tail_ttl = k and redis.call('PTTL', prefix .. 's:' .. s) or -2
  if tail_ttl ~= -2 then
    -- HSETNX finds a retried enqueue's entry (then the full path below answers it).
    local fresh = redis.call('HSETNX', m, add_id, head .. '|' .. owner) == 1
    if fresh then
      redis.call('ZADD', q, ts, add_id)
      return {3, t, own_ttl, pack(tail[1], tail[2], k, s, c, g, tail_ttl, '0', ow), ''}
    end
  end
end
-- The whole queue, in the shapes Redis already gives it (ZRANGE's id/score pairs, HMGET's
-- metas): a listing touches every entry, so each one costs only what the purge needs (its
-- session, by one match) and the reply is built without a string per entry. With 1000
-- entries that is a third of packing each entry (about 1 ms instead of 2.5 on one core).
local raw = redis.call('ZRANGE', q, 0, -1, 'WITHSCORES')
local n = #raw / 2
local ids = {}
for i = 1, n do ids[i] = raw[2 * i - 1] end
local metas = {}
for i = 1, n, 500 do
  local got = redis.call('HMGET', m, unpack(ids, i, math.min(i + 499, n)))
  for j = 1, #got do metas[i + j - 1] = got[j] end
end
local ttls = {}
local function session_ttl(sid)
  local t = ttls[sid]
  if t == nil then
    t = redis.call('PTTL', prefix .. 's:' .. sid)
    ttls[sid] = t
  end
  return t
end
local dead = false
local live = {}
for i = 1, n do
  local s = metas[i] and string.match(metas[i], '^%a|(%x+)|%d*|%d*|')
  live[i] = s ~= nil and session_ttl(s) ~= -2
  if not live[i] then dead = true end
end
if dead then
  local kept_raw, kept_metas, kept_n = {}, {}, 0
  for i = 1, n do
    if live[i] then
      kept_n = kept_n + 1
      kept_raw[2 * kept_n - 1], kept_raw[2 * kept_n] = raw[2 * i - 1], raw[2 * i]
      kept_metas[kept_n] = metas[i]
    else
      -- At the head if every entry before it went too (in this loop, just before it).
      local kind = metas[i] and string.match(metas[i], '^(%a)|%x+|%d*|%d*|')
      left(prefix, ids[i], kind, kept_n == 0, i < n, wake_ttl, v, o)
      redis.call('ZREM', q, ids[i])
      redis.call('HDEL', m, ids[i])
    end
  end
  raw, metas, n = kept_raw, kept_metas, kept_n
end
if n == 0 and add_id == '' then
  redis.call('DEL', h)  -- the queue emptied: the lock is free again
end
-- An entry's position (1-based): for the entry this call adds, placed by its score.
local function place_of(id)
  local r = redis.call('ZRANK', q, id)
  return r and r + 1
end
if add_id ~= '' and not place_of(add_id) then
  redis.call('ZADD', q, ts, add_id)
  local meta = add_kind .. '|' .. add_sid .. '|' .. add_created .. '||' .. owner
  redis.call('HSET', m, add_id, meta)
  n = n + 1
  -- At the back, but for a Redlock entry among others of its epoch, ordered by id.
  local p = place_of(add_id)
  table.insert(raw, 2 * p - 1, add_id)
  table.insert(raw, 2 * p, ts)
  table.insert(metas, p, meta)
  session_ttl(add_sid)
  -- Observers look: a candidate joined, or their name was taken as a lock or a semaphore.
  push_all(o, wake_ttl)
end
if bump then
  -- Redlock grants. The client's recipe decided, on its last listing of this server, which
  -- entries may stay ahead of each own entry while it holds (stamp_request in redis_merge.hpp);
  -- ARGV from 8 on: id, n, then those n ids, for each own entry. An own entry without a grant
  -- is stamped once no entry but those is ahead of it: entries never move, so those still
  -- ahead are in the order the recipe saw, and fewer entries ahead never stop an entry from
  -- holding. The entry this call adds is stamped if it is first, where every recipe holds.
  -- Who holds is not decided here; a client counts a master for its entry only once the
  -- entry is stamped there.
  local own_sid = string.sub(own, #prefix + 3)
  local asked = {}
  local a = 8
  while a < #ARGV do
    local k = tonumber(ARGV[a + 1])
    asked[#asked + 1] = {ARGV[a], k, a + 2}
    a = a + 2 + k
  end
  if add_id ~= '' then asked[#asked + 1] = {add_id, 0, a} end
  -- Places of the asked ids, from the listing (no command per id: a session asks for all
  -- of its entries, 125 per listing in the 1000-waiter run).
  local place = {}
  for _, ask in ipairs(asked) do place[ask[1]] = false end
  for i = 1, n do
    if place[raw[2 * i - 1]] == false then place[raw[2 * i - 1]] = i end
  end
  for _, ask in ipairs(asked) do
    local id, k = ask[1], ask[2]
    local p = place[id]
    -- More entries ahead than named: one of them was not named (ids are unique).
    if p and p - 1 <= k then
      local kind, sid, created, grant, rest =
        string.match(metas[p], '^(%a)|(%x+)|(%d*)|(%d*)|(.*)$')
      if sid == own_sid and grant == '' then
        local may_stay = {}
        for b = ask[3], ask[3] + k - 1 do may_stay[ARGV[b]] = true end
        local clear = true
        for r = 1, p - 1 do
          if not may_stay[raw[2 * r - 1]] then
            clear = false
            break
          end
        end
        if clear then
          local meta = kind .. '|' .. sid .. '|' .. created .. '|' ..
                       string.format('%d', next_token()) .. '|' .. rest
          redis.call('HSET', m, id, meta)
          metas[p] = meta
        end
      end
    end
  end
end
-- {4, counter, {id, score}..., {meta}..., {session, ttl}..., {candidate id, "version|value"}...,
--  term record (Redlock; else '')}
local sessions = {}
for sid, t in pairs(ttls) do
  if t ~= -2 then
    sessions[#sessions + 1] = sid
    sessions[#sessions + 1] = t
  end
end
local values = {}
if redis.call('EXISTS', v) == 1 then values = redis.call('HGETALL', v) end
local term_record = bump and redis.call('GET', term) or ''
return {4, tonumber(redis.call('GET', f) or '0'), raw, metas, sessions, values, term_record or ''}
)lua";

constexpr std::string_view release_text = R"lua(
local prefix, wake_ttl, sid, drop = ARGV[1], ARGV[2], ARGV[3], ARGV[4] == '1'
local removed = 0
-- An entry removed with a tombstone ('g': an enqueue of it failed, and may yet arrive late)
-- can never be added again (queue_text); the tombstone lasts ARGV[4] ms.
local tombs = prefix .. 'g:' .. sid
for p = 1, (#ARGV - 4) / 2 do
  local q, m, h, v, o = KEYS[5 * p - 4], KEYS[5 * p - 3], KEYS[5 * p - 2], KEYS[5 * p - 1],
                        KEYS[5 * p]
  local id, how = ARGV[3 + 2 * p], ARGV[4 + 2 * p]
  local maybe_lone, tomb = string.sub(how, 1, 1) == 'l', string.sub(how, 2, 2) == 'g'
  -- A lone holder is only ever in h (an entry that was queued never moves back there).
  local lone = false
  if maybe_lone then
    -- Entry ids start with their session's id, so the id alone proves the owner.
    local hv = redis.call('GET', h)
    if hv and string.sub(hv, 1, #id + 1) == id .. '|' then
      redis.call('DEL', h)
      left(prefix, id, string.match(hv, '^[^|]+|%d+|(%a)|'), true, false, wake_ttl, v, o)
      removed = removed + 1
      lone = true
    end
  end
  if not lone then
    local head = redis.call('ZRANGE', q, 0, 1)
    local meta = redis.call('HGET', m, id)
    local kind, owner = nil, nil
    if meta then kind, owner = string.match(meta, '^(%a)|(%x+)|') end
    if owner == sid then
      if head[1] == id and not head[2] then
        -- Alone in the queue: nobody to wake, and the queue's keys go with the entry.
        redis.call('DEL', q, m, h)
        left(prefix, id, kind, true, false, wake_ttl, v, o)
      else
        -- Its waiters get the storage facts (whether it left from the head; none if no entry
        -- is behind it) and decide with the recipe; none is counted or chosen here.
        local at_head = head[1] == id
        local followed = at_head or redis.call('ZRANGE', q, -1, -1)[1] ~= id
        redis.call('ZREM', q, id)
        redis.call('HDEL', m, id)
        left(prefix, id, kind, at_head, followed, wake_ttl, v, o)
      end
      removed = removed + 1
    end
  end
  if tomb and not drop then
    redis.call('SADD', tombs, id)
    redis.call('PEXPIRE', tombs, ARGV[4])
  end
end
-- Removed, but from a session an operator ended (force_unlock deletes its key): the hold was
-- gone before this release, as its holder must hear (lock_lost), not a success.
local alive = redis.call('EXISTS', KEYS[#KEYS]) == 1
if drop then redis.call('DEL', KEYS[#KEYS], tombs) end
if not alive and not drop then return 0 end
return removed
)lua";

constexpr std::string_view release_lone_text = R"lua(
local v = redis.call('GET', KEYS[1])
if v and string.sub(v, 1, #ARGV[1] + 1) == ARGV[1] .. '|' then
  redis.call('DEL', KEYS[1])
  -- 2: removed, but its session had been ended by an operator (its key deleted).
  if redis.call('EXISTS', KEYS[2]) == 0 then return 2 end
  return 1
end
return 0
)lua";

const std::string queue_full = std::string(lua_common) + std::string(queue_text);
const std::string release_full = std::string(lua_common) + std::string(release_text);

}  // namespace

// The kind letter stored for an entry (redis_scripts.hpp): the engine hands permits and
// candidates over as exclusive, with what they are in their id (verdict.hpp); the scripts
// need to know them apart only for whom a removal notifies, never for who holds.
char stored_kind(entry_kind kind, std::string_view id) {
  if (kind == entry_kind::shared) return 's';
  if (id.ends_with("~e")) return 'e';
  // "~p<1-4 digits>" at the end.
  std::size_t digits = 0;
  while (digits < id.size() && digits < 5 && id[id.size() - 1 - digits] >= '0' &&
         id[id.size() - 1 - digits] <= '9')
    ++digits;
  if (digits == 0 || digits > 4 || id.size() < digits + 2) return 'x';
  return id.substr(id.size() - digits - 2, 2) == "~p" ? 'p' : 'x';
}

const lua_script queue_script{"queue", queue_full};
const lua_script release_script{"release", release_full};
const lua_script release_lone_script{"release_lone", release_lone_text};

}  // namespace dlock::detail::redis
