// The scripts of semaphores and elections on redis:// (redis_scripts.hpp): a value set by its
// owner, a waiter's registration on the entries it waits on, an observer's on the lock. None
// decides who holds.
#include <string>

#include "backends/redis/redis_lua_common.hpp"
#include "backends/redis/redis_scripts.hpp"

namespace dlock::detail::redis {
namespace {

constexpr std::string_view set_value_at_text = R"lua(
local m, h, v, o, own, term = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local id, value, ver, ttl, sid = ARGV[1], ARGV[2], tonumber(ARGV[3]), ARGV[4], ARGV[5]
-- A candidate granted before its first value was set records its term with it (term_text):
-- its observers need both, and one request saves a round per uncontended campaign.
local term_token = tonumber(ARGV[6])
-- The client chose the version (one per attempt), so a server keeps the highest it was sent
-- and a late or repeated write never goes back (Redis and Redlock alike). The owner's write (sid given) needs
-- its live session's entry; a reader's write-back of a version it saw elsewhere (sid '')
-- only needs the entry. Storage, not a verdict.
if sid ~= '' and redis.call('PTTL', own) == -2 then return -1 end
local entry_sid
local meta = redis.call('HGET', m, id)
if meta then
  entry_sid = string.match(meta, '^%a|(%x+)|')
else
  local hv = redis.call('GET', h)
  if hv and string.sub(hv, 1, #id + 1) == id .. '|' then
    entry_sid = string.match(hv, '^[^|]+|%d+|%a|(%x+)|')
  end
end
if not entry_sid or (sid ~= '' and entry_sid ~= sid) then return -1 end
if term_token then
  local rec = redis.call('GET', term)
  local rec_token = rec and tonumber(string.match(rec, '|(%d+)$')) or 0
  if rec_token < term_token then redis.call('SET', term, id .. '|' .. ARGV[6]) end
end
local _, have = value_of(redis.call('HGET', v, id))
have = tonumber(have)
if have >= ver then return have end
redis.call('HSET', v, id, string.format('%d', ver) .. '|' .. value)
push_all(o, ttl)
return ver
)lua";

constexpr std::string_view watch_text = R"lua(
local m, h = KEYS[1], KEYS[2]
local prefix, ttl, inbox = ARGV[1], ARGV[2], ARGV[3]
-- Registers `inbox` on each awaited entry, in the same step as seeing that it is still there
-- and its session alive: a removal after this pushes to the inbox, one before it is seen
-- here (0: look again at once). Which waiter holds next is not decided here.
-- Else the earliest end of an awaited lease (ms, at least 1; -1: none ends by itself): a
-- crashed holder's entry goes when its session key expires, which pushes nothing, so that
-- is when the waiter must look again.
local soonest = -1
for a = 4, #ARGV do
  local id = ARGV[a]
  local sid
  local meta = redis.call('HGET', m, id)
  if meta then
    sid = string.match(meta, '^%a|(%x+)|')
  else
    local hv = redis.call('GET', h)
    if hv and string.sub(hv, 1, #id + 1) == id .. '|' then
      sid = string.match(hv, '^[^|]+|%d+|%a|(%x+)|')
    end
  end
  local left = sid and redis.call('PTTL', prefix .. 's:' .. sid) or -2
  if left == -2 then return 0 end
  if left >= 0 and (soonest < 0 or left < soonest) then soonest = math.max(left, 1) end
  local r = prefix .. 'r:' .. id
  redis.call('SADD', r, inbox)
  redis.call('PEXPIRE', r, ttl)
end
return soonest
)lua";

constexpr std::string_view observe_text = R"lua(
redis.call('SADD', KEYS[1], ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
)lua";

const std::string set_value_at_full = std::string(lua_common) + std::string(set_value_at_text);

}  // namespace

const lua_script set_value_at_script{"set_value_at", set_value_at_full};
const lua_script watch_script{"watch", watch_text};
const lua_script observe_script{"observe", observe_text};

}  // namespace dlock::detail::redis
