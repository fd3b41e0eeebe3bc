// Redlock's counter scripts: raising a lock's fencing counter to a settled grant, and the
// leader's term record that election observers read.
#include <string>
#include <string_view>

#include "backends/redis/redis_lua_common.hpp"
#include "backends/redis/redis_scripts.hpp"

namespace dlock::detail::redis {
namespace {

constexpr std::string_view raise_text = R"lua(
local c = tonumber(redis.call('GET', KEYS[1]) or '0')
local x = tonumber(ARGV[1])
if c < x then
  redis.call('SET', KEYS[1], ARGV[1])
  c = x
  -- A raised counter is a token given (Redlock's): the floor covers it too (queue_text).
  local low = tonumber(redis.call('GET', KEYS[2]) or '0')
  if x > low then redis.call('SET', KEYS[2], ARGV[1]) end
end
return c
)lua";

// Redlock elections: the leader's record of its term, written once its fencing token is
// settled, for observers to report (a place is not a term: entries of one epoch share one).
// Raises the counter as raise_text does (the token is a grant, and a majority must have
// counters at least as high), then records "id|token" in t:<lock> if entry `id` is still here
// and no higher term is recorded, waking the observers. Storage, not a verdict: the client
// decided the entry leads. Returns 1 if the record names this term, 0 if the entry is gone
// here, -1 if a higher term is recorded.
constexpr std::string_view term_text = R"lua(
local f, floor, term, m, h, o = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local x, id, ttl = tonumber(ARGV[1]), ARGV[2], ARGV[3]
local c = tonumber(redis.call('GET', f) or '0')
if c < x then
  redis.call('SET', f, ARGV[1])
  local low = tonumber(redis.call('GET', floor) or '0')
  if x > low then redis.call('SET', floor, ARGV[1]) end
end
local present = redis.call('HEXISTS', m, id) == 1
if not present then
  local hv = redis.call('GET', h)
  present = hv and string.sub(hv, 1, #id + 1) == id .. '|'
end
if not present then return 0 end
local have = redis.call('GET', term)
local have_token = have and tonumber(string.match(have, '|(%d+)$')) or 0
if have_token > x then return -1 end
if have_token == x then return string.sub(have, 1, #id + 1) == id .. '|' and 1 or -1 end
redis.call('SET', term, id .. '|' .. ARGV[1])
push_all(o, ttl)
return 1
)lua";

const std::string term_full = std::string(lua_common) + std::string(term_text);

}  // namespace

const lua_script raise_script{"raise", raise_text};
const lua_script term_script{"term", term_full};

}  // namespace dlock::detail::redis
