// redis-sentinel://: what a failover did to this session's entries. A replica promoted by
// Sentinel has what the old master had replicated to it: with ?replicas=N every counted
// acquire (sessions/entries and their tokens), without it possibly not the last ones. A holder
// whose entry the new master lacks has lost its lock, and another client may already have it:
// the first renewal on the new master looks, and ends the session (every hold is told lost).
#include <hiredis/hiredis.h>

#include "backends/redis/redis_session.hpp"

namespace dlock::detail::redis {
namespace {

// KEYS (h q)...; ARGV ids: the 1-based number of the first id that is neither the lone holder
// in its h nor a member of its q, or 0 when all are there.
constexpr std::string_view present_text = R"lua(
for i = 1, #ARGV do
  local id = ARGV[i]
  local hv = redis.call('GET', KEYS[2 * i - 1])
  local lone = hv and string.sub(hv, 1, #id + 1) == id .. '|'
  if not lone and not redis.call('ZSCORE', KEYS[2 * i], id) then return i end
end
return 0
)lua";
const lua_script present_script{"present", present_text};

}  // namespace

void session::placed(std::string_view lock, std::string_view id, bool add) {
  if (cfg_.sentinels.empty()) return;
  std::lock_guard lk(mu_);
  if (add) {
    placed_[std::string(lock)].insert(std::string(id));
    return;
  }
  if (auto it = placed_.find(lock); it != placed_.end()) {
    it->second.erase(std::string(id));
    if (it->second.empty()) placed_.erase(it);
  }
}

result<void> session::check_failover() {
  if (cfg_.sentinels.empty()) return {};
  // Read before the check: a failover during it is checked again at the next renewal.
  const auto epoch = nodes_[0]->epoch();
  if (epoch == verified_epoch_.load()) return {};
  std::vector<std::string> argv{"0"}, ids;
  {
    std::lock_guard lk(mu_);
    for (const auto& [lock, set] : placed_) {
      for (const auto& id : set) {
        argv.push_back(key('h', lock));
        argv.push_back(key('q', lock));
        ids.push_back(lock + "' entry " + id);
      }
    }
  }
  if (!ids.empty()) {
    argv[0] = std::to_string(ids.size() * 2);
    for (const auto& id : ids) argv.push_back(id.substr(id.rfind(' ') + 1));
    auto r = nodes_[0]->run({&present_script, std::move(argv)}, expired_.get_token());
    if (!r) return fail(r.error());
    if ((*r)->type != REDIS_REPLY_INTEGER)
      return fail(errc::protocol_error, cfg_.servers[0].where + ": malformed reply");
    if (auto missing = (*r)->integer; missing > 0) {
      return fail(errc::session_expired,
                  cfg_.servers[0].where + " failed over to " + nodes_[0]->master_address() +
                      ", which lacks lock '" + ids[static_cast<std::size_t>(missing - 1)] +
                      " (not replicated before the old master went; ?replicas=1 waits for "
                      "that): the session's holds are lost");
    }
  }
  verified_epoch_ = epoch;
  return {};
}

}  // namespace dlock::detail::redis
