// Redlock: each renewal checks that every entry this session holds is still on a majority of
// masters (redis_session.hpp: check_held_majority).
#include <string>
#include <utility>
#include <vector>

#include "backends/redis/redis_lua_common.hpp"
#include "backends/redis/redis_session.hpp"

namespace dlock::detail::redis {
namespace {

// KEYS: (h, q) per entry; ARGV: the entry ids. One 0/1 per entry: stored here (the lock's
// lone-holder key names it, or its queue has it).
constexpr std::string_view present_each_text = R"lua(
local out = {}
for i = 1, #ARGV do
  local id = ARGV[i]
  local hv = redis.call('GET', KEYS[2 * i - 1])
  local lone = hv and string.sub(hv, 1, #id + 1) == id .. '|'
  out[i] = (lone or redis.call('ZSCORE', KEYS[2 * i], id)) and 1 or 0
end
return out
)lua";
const lua_script present_each_script{"present_each", present_each_text};

}  // namespace

result<void> session::check_held_majority() {
  if (!redlock()) return {};
  std::vector<std::pair<std::string, std::string>> held;  // (lock, id)
  std::vector<std::string> argv{"0"};
  {
    std::lock_guard lk(mu_);
    for (const auto& [lock, ids] : mine_) {
      for (const auto& id : ids) {
        if (!settled_.contains(id) || releasing_.contains(id)) continue;  // not holding
        argv.push_back(key('h', lock));
        argv.push_back(key('q', lock));
        held.emplace_back(lock, id);
      }
    }
  }
  if (held.empty()) return {};
  argv[0] = std::to_string(held.size() * 2);
  for (const auto& e : held) argv.push_back(e.second);
  auto replies =
      run_all(nodes_, std::vector<request>(nodes_.size(), request{&present_each_script, argv}), {},
              expired_.get_token());
  std::size_t answered = 0;
  std::vector<std::size_t> present(held.size(), 0);
  for (const auto& r : replies) {
    if (!r || (*r)->type != REDIS_REPLY_ARRAY || (*r)->elements != held.size()) continue;
    ++answered;
    for (std::size_t i = 0; i < held.size(); ++i) {
      const auto* x = (*r)->element[i];
      if (x->type == REDIS_REPLY_INTEGER && x->integer == 1) ++present[i];
    }
  }
  // A master that did not answer (frozen, down) may still have the entry: only an entry that
  // cannot be on a majority even so is lost. A frozen master's own purge is seen once it
  // answers again, at a renewal after it.
  const std::size_t silent = nodes_.size() - answered;
  for (std::size_t i = 0; i < held.size(); ++i) {
    if (present[i] + silent >= quorum()) continue;
    const auto& [lock, id] = held[i];
    {
      std::lock_guard lk(mu_);
      auto it = mine_.find(lock);
      // Released since the list was taken (or being released): its removal is what the
      // masters show.
      if (it == mine_.end() || !it->second.contains(id) || !settled_.contains(id) ||
          releasing_.contains(id))
        continue;
    }
    return fail(errc::session_expired,
                "redlock: lock '" + lock + "' entry " + id + " is on " +
                    std::to_string(present[i]) + " of " + std::to_string(nodes_.size()) +
                    " masters, not a majority (masters that were down or frozen past the lease "
                    "purged it): another may be granted, so every hold of this session is lost");
  }
  return {};
}

}  // namespace dlock::detail::redis
