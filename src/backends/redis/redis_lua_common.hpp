#pragma once
// Lua functions shared by the scripts (prepended to each script's text): the wake-ups of the
// locks' waiters and the notifications of the semaphores' waiters and elections' observers.
#include <string_view>

namespace dlock::detail::redis {

// Shared by the scripts: how many entries wait on the entry at position i of ids/kinds
// (the recipes of verdict.hpp: an exclusive entry waits on its predecessor; a shared one on
// the last exclusive entry before it), and the push of that many wake tokens.
inline constexpr std::string_view lua_common = R"lua(
local function count_waiters(kinds, i, n)
  -- A permit's waiters register themselves (r:<id>, see left()): no tokens here.
  if kinds[i] == 'p' then return 0 end
  local c = 0
  for j = i + 1, n do
    if kinds[j] ~= 's' then
      if j == i + 1 then c = c + 1 end
      return c
    end
    if kinds[i] ~= 's' then c = c + 1 else return c end
  end
  return c
end
-- Whether every entry (by its stored text) belongs to a live session. An 'h' wake token
-- lets the woken entry hold without listing, so it goes only to live sessions: a waiter
-- whose session ended must list, find its entry purged, and hold nothing.
local function live_sessions(prefix, metas)
  for _, meta in ipairs(metas) do
    local s = meta and string.match(meta, '^%a|(%x+)|')
    if not s or redis.call('PTTL', prefix .. 's:' .. s) == -2 then return false end
  end
  return true
end
local function wake(prefix, id, n, ttl, value)
  if n > 0 then
    local key = prefix .. 'w:' .. id
    for _ = 1, n do redis.call('RPUSH', key, value) end
    redis.call('PEXPIRE', key, ttl)
  end
end
-- One token to each inbox registered in the set `set_key` (waiters of one entry, or a lock's
-- observers); a registration serves one wake-up, so the set goes.
local function push_all(set_key, ttl)
  local inboxes = redis.call('SMEMBERS', set_key)
  for _, box in ipairs(inboxes) do
    redis.call('RPUSH', box, '1')
    redis.call('PEXPIRE', box, ttl)
  end
  if #inboxes > 0 then redis.call('DEL', set_key) end
end
-- What goes with entry `id` of kind `kind` besides its place in the queue: the permit entries'
-- registered waiters are woken (whoever the recipe lets in next decides for itself); an
-- election candidate's value goes and the lock's observers are woken.
local function left(prefix, id, kind, ttl, v, o)
  if kind == 'p' then
    push_all(prefix .. 'r:' .. id, ttl)
  elseif kind == 'e' then
    redis.call('HDEL', v, id)
    push_all(o, ttl)
  end
end
-- An entry's value and version as stored in v: "version|value" (absent: never set).
local function value_of(stored)
  if not stored then return '', '0' end
  local ver, val = string.match(stored, '^(%d+)|(.*)$')
  if not ver then return '', '0' end
  return val, ver
end
)lua";

}  // namespace dlock::detail::redis
