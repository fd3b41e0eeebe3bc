#pragma once
// The etcd v3 calls the backend makes, over one gRPC channel, with plain C++ types: the only
// interface to the generated code (etcd_rpc.proto), whose headers stay in etcd_client.cpp.
//
// Every call has a deadline (request_timeout) and can be cut off by close(). Once a call has
// succeeded, calls wait through a reconnect (gRPC's wait_for_ready) up to that deadline instead
// of failing at once while the channel is in TRANSIENT_FAILURE. gRPC statuses map
// to dlock's errors as etcd_channel.hpp says (unavailable, session_expired, permission_denied
// for refused log-ins and TLS handshakes). With a user in the URL, open() logs in (Auth
// Authenticate) and every call carries the token; a token the server refuses later is
// replaced by logging in again, and the call retried once.

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <stop_token>
#include <string>
#include <vector>

#include "backends/etcd/etcd_config.hpp"
#include "core/backend.hpp"

namespace dlock::detail::etcd {

struct key_value {
  std::string key, value;
  std::int64_t create_revision{0}, mod_revision{0}, version{0}, lease{0};
};

struct range_result {
  std::int64_t revision{0};    // the store's revision the answer was read at
  std::vector<key_value> kvs;  // sorted by create revision (ascending unless asked otherwise)
  bool more{false};            // more keys (within the revision bounds) than the limit let in
};

// A Txn's comparison: the key's create revision, or its value, equal to the one given.
struct txn_compare {
  std::string key;
  bool on_value{false};
  std::int64_t create_revision{0};
  std::string value;
};

// A Txn's operation: a put (with a lease), a range sorted by create revision, or a delete.
struct txn_op {
  enum kind_t { put, range, del } kind{range};
  std::string key;
  std::string end;    // range: the range's end ("" for the key alone)
  std::string value;  // put
  std::int64_t lease{0};
  // range: at most `limit` keys (0: all), newest first if `newest_first`, none created after
  // `max_create_revision` (0: no bound) -- Go's WithLastCreate/WithMaxCreateRev.
  std::int64_t limit{0};
  bool newest_first{false};
  std::int64_t max_create_revision{0};
};

inline txn_op put_op(std::string key, std::string value, std::int64_t lease) {
  txn_op o;
  o.kind = txn_op::put;
  o.key = std::move(key);
  o.value = std::move(value);
  o.lease = lease;
  return o;
}
inline txn_op del_op(std::string key) {
  txn_op o;
  o.kind = txn_op::del;
  o.key = std::move(key);
  return o;
}
inline txn_op range_op(std::string key, std::string end = {}, std::int64_t limit = 0,
                       bool newest_first = false, std::int64_t max_create_revision = 0) {
  txn_op o;
  o.key = std::move(key);
  o.end = std::move(end);
  o.limit = limit;
  o.newest_first = newest_first;
  o.max_create_revision = max_create_revision;
  return o;
}

struct txn_result {
  bool succeeded{false};
  std::int64_t revision{0};
  std::vector<range_result> ranges;
};

// A key to wait on, and the revision from which its history is replayed: a deletion after
// it is seen even if it happened before the watch was set up. With the key's create revision
// known, the watch starts at the present instead (etcd serves a watch from a past revision
// only on its catch-up tick, 100 ms in 3.4) and one Range, once the watch is in place,
// checks that this incarnation of the key is still there.
struct watched_key {
  std::string key;
  std::int64_t from_revision{0};
  std::int64_t create_revision{0};  // 0: unknown (replayed from from_revision)
};

class client {
 public:
  static result<std::unique_ptr<client>> open(const config& c);
  virtual ~client() = default;

  // LeaseGrant: {id, granted TTL in seconds}.
  virtual result<std::pair<std::int64_t, std::int64_t>> grant(std::int64_t ttl_seconds) = 0;
  virtual result<void> revoke(std::int64_t lease, steady::time_point deadline) = 0;
  // One LeaseKeepAlive round for each lease; session_expired if any is gone (answered with
  // TTL <= 0). Returns the smallest TTL granted. Given up at `deadline` (default: the config's
  // request_timeout from now) with backend_unavailable.
  virtual result<std::int64_t> keep_alive(
      std::span<const std::int64_t> leases,
      std::optional<steady::time_point> deadline = std::nullopt) = 0;

  // One Txn: if every comparison holds, `success`, else `failure`. The ranges' results come
  // back in the order of their ops (puts and deletes give none). Given up at `deadline`
  // (default: the config's request_timeout from now) with backend_unavailable; the call is
  // then cancelled, so no late reply can be read as another call's.
  virtual result<txn_result> txn(const std::vector<txn_compare>& compare,
                                 const std::vector<txn_op>& success,
                                 const std::vector<txn_op>& failure,
                                 std::optional<steady::time_point> deadline = std::nullopt) = 0;
  virtual result<range_result> range(const std::string& begin, const std::string& end,
                                     bool keys_only) = 0;
  // DeleteRange of one key: how many keys it deleted (0: it was not there). Deadline as txn().
  virtual result<std::int64_t> del(const std::string& key, steady::time_point deadline) = 0;

  // Watches `keys` (one watch each, on the session's one Watch stream: etcd_watch.hpp) until
  // one is deleted (true), or `deadline`, `stop` or close() (false). A watch the server
  // cancels (its revision compacted) is set up again from the compaction revision.
  virtual result<bool> await_delete(std::span<const watched_key> keys, steady::time_point deadline,
                                    std::stop_token stop) = 0;

  // Watches the keys [begin, end) from `from_revision` until any of them changes (true), or
  // `deadline`, `stop` or close() (false).
  virtual result<bool> await_change(const std::string& begin, const std::string& end,
                                    std::int64_t from_revision, steady::time_point deadline,
                                    std::stop_token stop) = 0;

  // Cuts off every call in flight and every later one (close).
  virtual void shut_down() noexcept = 0;
};

}  // namespace dlock::detail::etcd
