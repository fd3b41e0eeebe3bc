#include "backends/etcd/etcd_own_check.hpp"

#include <algorithm>
#include <cstddef>
#include <string>
#include <vector>

namespace dlock::detail::etcd {

result<void> own_keys_kept(client& c, own_entries& own,
                           std::chrono::steady_clock::time_point deadline) {
  const auto keys = own.live_keys();
  constexpr std::size_t per_txn = 64;
  for (std::size_t at = 0; at < keys.size(); at += per_txn) {
    const auto n = std::min(per_txn, keys.size() - at);
    std::vector<txn_compare> same;
    std::vector<txn_op> reads;  // on failure: which one
    for (std::size_t i = at; i < at + n; ++i) {
      same.push_back({keys[i].first, false, keys[i].second, {}});
      reads.push_back(range_op(keys[i].first));
    }
    auto t = c.txn(same, {}, reads, deadline);
    if (!t) return fail(t.error());
    if (t->succeeded) continue;
    const auto live = own.live_keys();  // our own deletes since the list was taken
    for (std::size_t i = 0; i < n && i < t->ranges.size(); ++i) {
      const auto& kvs = t->ranges[i].kvs;
      const auto& mine = keys[at + i];
      if (!kvs.empty() && kvs.front().create_revision == mine.second) continue;
      if (std::find(live.begin(), live.end(), mine) == live.end()) continue;
      return fail(errc::session_expired,
                  "etcd key '" + mine.first +
                      "' of this session was deleted or replaced by another client: its lock "
                      "may have been granted to another, so every hold of this session is lost");
    }
  }
  return {};
}

}  // namespace dlock::detail::etcd
