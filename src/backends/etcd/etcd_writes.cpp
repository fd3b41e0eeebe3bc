#include "backends/etcd/etcd_writes.hpp"

#include <algorithm>
#include <string>

namespace dlock::detail::etcd {

result<void> remove_own(client& c, own_entries& own_entries, std::string_view lock,
                        std::string_view id, std::chrono::steady_clock::time_point until) {
  auto found = own_entries.find(lock, id);
  if (!found) return fail(errc::lock_lost, "etcd entry " + std::string(id) + " is gone");
  const auto& own = *found;
  own_entries.begin_removal(lock, id);  // the renewal's check must not take it for another's
  // A lock's entry: its key is its lease's own and no later entry of this session uses it
  // while this one is listed (own_key), so a plain delete deletes only this entry -- Go's
  // Unlock, the floor's release.
  bool deleted = false;
  result<void> sent;
  if (own.candidate()) {
    auto t = c.txn({{own.meta_key, true, 0, own.record}}, {del_op(own.key), del_op(own.meta_key)},
                   {}, until);
    if (t) {
      deleted = t->succeeded;
    } else {
      sent = fail(t.error());
    }
  } else {
    auto d = c.del(own.key, until);
    if (d) {
      deleted = *d > 0;
    } else {
      sent = fail(d.error());
    }
  }
  if (!sent) {
    own_entries.mark_unsure(lock, id);
    return sent;
  }
  // Gone either way: the lease's slot on this lock is free again, unless a delete cut off
  // before may still arrive.
  own_entries.forget(lock, id);
  if (!deleted) {
    return fail(errc::lock_lost,
                "etcd key '" + own.key + "' is gone (its lease ended, or someone deleted it)");
  }
  return {};
}

// Go's Proclaim: a put of the candidate's key guarded by its create revision (and by the
// companion, so it is this entry's), read back for the version. A retry after a lost reply
// puts the same value again: one version more, harmless (observers compare values too).
result<std::uint64_t> proclaim(client& c, own_entries& own_entries, std::string_view lock,
                               std::string_view id, std::string_view value) {
  auto found = own_entries.find(lock, id);
  if (!found || found->create_revision == 0) {
    return fail(errc::lock_lost, "etcd entry " + std::string(id) + " is gone");
  }
  if (!found->candidate()) {
    return fail(errc::unsupported, "etcd entry " + std::string(id) + " is no candidate");
  }
  const auto& own = *found;
  auto t = c.txn({{own.key, false, own.create_revision, {}}, {own.meta_key, true, 0, own.record}},
                 {put_op(own.key, std::string(value), own.lease), range_op(own.key)}, {});
  if (!t) return fail(t.error());
  if (!t->succeeded || t->ranges.empty() || t->ranges[0].kvs.empty()) {
    return fail(errc::lock_lost, "etcd key '" + own.key + "' is gone");
  }
  return static_cast<std::uint64_t>(std::max<std::int64_t>(t->ranges[0].kvs[0].version - 1, 1));
}

}  // namespace dlock::detail::etcd
