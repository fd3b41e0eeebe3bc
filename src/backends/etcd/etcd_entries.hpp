#pragma once
// The entries one etcd session wrote, and its pool of leases. The layout names a contender's
// key by its lease ("P/NAME/<lease hex>", Go's Mutex), so one lease has at most one key per
// lock: an entry takes the first lease of the pool with no key on its lock, and the session
// grants one more only when every lease has one. Thread-safe.

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/backend.hpp"
#include "core/verdict.hpp"

namespace dlock::detail::etcd {

// An entry this session wrote: its contender key, and a candidate's companion with the
// record, which a candidate's removal and set_value compare (etcd_keys.hpp).
struct own_entry {
  std::string key;
  std::string meta_key;  // a candidate's companion; "" for a lock's entry (record in the value)
  std::string record;
  std::int64_t lease{0};
  std::int64_t create_revision{0};  // once known: what set_value guards its put with
  verdict_reads need;               // the window its waiter reads (etcd_queue.hpp)
  // A removal of it was cut off, so a delete may still land late: the lease's key on this lock
  // is never used again (a later entry there could be deleted by it).
  bool remove_unsure{false};
  bool removing{false};  // our delete of it has begun: its key's absence is no news
  bool candidate() const { return !meta_key.empty(); }
};

class own_entries {
 public:
  // The entry recorded for (lock, id) by an earlier attempt (a retry after a lost reply
  // creates nothing twice), else a new one, made by `make` on a lease with no key on `lock`.
  // nullopt: every lease has a key there (grant one, add_lease, try again);
  // session_expired once the pool is empty (closed).
  result<std::optional<own_entry>> take(std::string_view lock, std::string_view id,
                                        const std::function<own_entry(std::int64_t)>& make);
  void add_lease(std::int64_t lease);
  std::optional<own_entry> find(std::string_view lock, std::string_view id);
  void set_revision(std::string_view lock, std::string_view id, std::int64_t rev);
  // A removal was cut off: the lease's key on this lock stays retired after forget().
  void mark_unsure(std::string_view lock, std::string_view id);
  // Our delete of the entry begins (before it is sent): a renewal's check skips it from now.
  void begin_removal(std::string_view lock, std::string_view id);
  // (key, create revision) of each entry whose key should be stored: its create revision
  // known, and not being deleted by us. What each renewal checks (keep_alive).
  std::vector<std::pair<std::string, std::int64_t>> live_keys();
  // The entry is gone: its lease's slot on the lock is free again, unless marked unsure.
  void forget(std::string_view lock, std::string_view id);
  std::vector<std::int64_t> leases();
  // Empties the pool (close): every later take() is session_expired.
  std::vector<std::int64_t> take_leases();

 private:
  static std::string key_of(std::string_view lock, std::string_view id);

  std::mutex mu_;
  std::vector<std::int64_t> leases_;                    // the pool; [0] granted at open
  std::map<std::string, own_entry> own_;                // by key_of(lock, entry id)
  std::map<std::string, std::set<std::int64_t>> used_;  // lock -> leases with a key on it
};

}  // namespace dlock::detail::etcd
