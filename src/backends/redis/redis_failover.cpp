// A single master's check, at each renewal, that this session's entries are still stored
// there. Another client may have deleted one (redis-cli DEL of a lock's keys): its lock may
// already be someone else's. And with redis-sentinel://, a replica promoted by Sentinel has
// what the old master had replicated to it: with ?replicas=N every counted acquire
// (sessions/entries and their tokens), without it possibly not the last ones. Either way the
// holder has lost its lock: the renewal ends the session (every hold is told lost).
#include <hiredis/hiredis.h>

#include <string>
#include <utility>
#include <vector>

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
  if (redlock()) return;
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

result<void> session::check_own_entries() {
  if (redlock()) return {};
  // Read before the check: a failover during it is checked again at the next renewal.
  const auto epoch = nodes_[0]->epoch();
  const bool failed_over = !cfg_.sentinels.empty() && epoch != verified_epoch_.load();
  std::vector<std::string> argv{"0"};
  std::vector<std::pair<std::string, std::string>> entries;  // (lock, id), in argv's order
  {
    std::lock_guard lk(mu_);
    for (const auto& [lock, set] : placed_) {
      for (const auto& id : set) {
        argv.push_back(key('h', lock));
        argv.push_back(key('q', lock));
        entries.emplace_back(lock, id);
      }
    }
  }
  if (!entries.empty()) {
    argv[0] = std::to_string(entries.size() * 2);
    for (const auto& e : entries) argv.push_back(e.second);
    auto r = nodes_[0]->run({&present_script, std::move(argv)}, expired_.get_token());
    if (!r) return fail(r.error());
    if ((*r)->type != REDIS_REPLY_INTEGER)
      return fail(errc::protocol_error, cfg_.servers[0].where + ": malformed reply");
    if (auto missing = (*r)->integer; missing > 0) {
      const auto& [lock, id] = entries.at(static_cast<std::size_t>(missing - 1));
      bool still_ours = false;
      {
        std::lock_guard lk(mu_);
        auto it = placed_.find(lock);
        still_ours = it != placed_.end() && it->second.contains(id);
      }
      // Released by this session since the list was taken: no news (and a failover is
      // checked again at the next renewal, as the entries after it were not).
      if (!still_ours) return {};
      if (failed_over) {
        return fail(errc::session_expired,
                    cfg_.servers[0].where + " failed over to " + nodes_[0]->master_address() +
                        ", which lacks lock '" + lock + "' entry " + id +
                        " (not replicated before the old master went; ?replicas=1 waits for "
                        "that): the session's holds are lost");
      }
      return fail(errc::session_expired,
                  cfg_.servers[0].where + ": entry " + id + " of lock '" + lock +
                      "' was deleted by another client, not released by this session: its lock "
                      "may have been granted to another, so every hold of this session is lost");
    }
  }
  if (failed_over) verified_epoch_ = epoch;
  return {};
}

}  // namespace dlock::detail::redis
