#pragma once
// Lua functions shared by the scripts (prepended to each script's text): the wake-ups of the
// locks' waiters and the notifications of the semaphores' waiters and elections' observers.
#include <string_view>

namespace dlock::detail::redis {

// Shared by the scripts: the wake-ups of whoever waits on a removed entry, and the
// notifications of the semaphores' waiters and elections' observers. Which waiter holds is
// never decided here: a woken waiter decides with the recipe (src/core/verdict.cpp).
inline constexpr std::string_view lua_common = R"lua(
-- Entry `id` left the queue: one token in w:<id>, for every waiter registered on it. A waiter
-- registers by blocking on that list with BLMOVE w:<id> w:<id> (a rotation: it takes the token
-- and puts it back), so one token wakes every waiter blocked there, however many the recipe
-- made wait on the entry, and one that arrives later finds it at once; it expires with the
-- wake TTL. The token is a storage fact for the waiters to decide on, not a verdict: 'h' if
-- the entry was at the head of the queue as it left (so every entry ahead of it had left
-- before), '1' if not.
local function wake(prefix, id, at_head, ttl)
  local key = prefix .. 'w:' .. id
  redis.call('RPUSH', key, at_head and 'h' or '1')
  redis.call('PEXPIRE', key, ttl)
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
-- Entry `id` of kind `kind` left the queue (at its head or not; `followed`: some entry was
-- behind it, else nobody can be waiting on it). The permit entries' registered waiters are
-- woken (r:<id>); any other entry's waiters by its token; an election candidate's value goes
-- and the lock's observers are woken. Whoever the recipe lets in next decides for itself.
local function left(prefix, id, kind, at_head, followed, ttl, v, o)
  if kind == 'p' then
    push_all(prefix .. 'r:' .. id, ttl)
    return
  end
  if followed then wake(prefix, id, at_head, ttl) end
  if kind == 'e' then
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
