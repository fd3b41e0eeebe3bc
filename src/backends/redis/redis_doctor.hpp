#pragma once
// What a Redis server's configuration does to dlock's guarantees: the refusals at open (a
// server that evicts keys, a replica, Redis Cluster) and the findings of `dlock doctor`
// (persistence, replicas). Read from INFO and CONFIG GET; CONFIG may be disabled or renamed
// (managed services do), and then the finding is "unknown", never a failed open.

#include <dlock/doctor.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "backends/redis/redis_conn.hpp"
#include "core/result.hpp"

namespace dlock::detail::redis {

// The text of an INFO reply; empty when the reply is not one (INFO disabled).
std::string_view info_text(const result<reply_ptr>& r);

// The value of `name` ("role") in INFO text; empty if absent.
std::string info_field(std::string_view info, std::string_view name);

// unsupported, with the reason, when the INFO of the server `where` shows a set-up unsafe for
// any lock: keys evicted under memory pressure, a replica, Redis Cluster. Empty INFO: not
// judged (a server that hides INFO; docs/redis.md says what to check by hand).
result<void> refuse_unsafe(std::string_view info, const std::string& where);

// The findings for one server from its INFO and its CONFIG GET save / appendfsync replies.
// `where` prefixes each reason when there are several servers (Redlock); `replicas` is the
// URL's ?replicas=N (writes count once N replicas acknowledged them).
std::vector<check_finding> findings(std::string_view info, const result<reply_ptr>& save,
                                    const result<reply_ptr>& appendfsync, const std::string& where,
                                    int replicas = 0);

}  // namespace dlock::detail::redis
