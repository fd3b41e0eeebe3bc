#pragma once
// redis-sentinel://: the master's address comes from Redis Sentinel at every new connection
// (SENTINEL get-master-addr-by-name), as Sentinel's client guidelines ask, so that a client
// follows a failover the way it would reconnect to a restarted server. Each master found is
// checked (ROLE) before it is used: a sentinel that has not yet learnt of a failover may still
// name the old master, now a replica.

#include <chrono>
#include <memory>
#include <optional>
#include <span>
#include <stop_token>
#include <string>

#include "backends/redis/redis_conn.hpp"

namespace dlock::detail::redis {

// A connection to the master, with what identifies that master.
struct found_master {
  std::unique_ptr<connection> conn;
  std::string address;  // host:port
  // master_replid (INFO replication): a promoted replica, or a master restarted without its
  // data, starts a new one, so a change tells a failover from a reconnect.
  std::string replid;
};

// Asks the sentinels, starting with sentinels[first] (then updated to the one that answered),
// for the master named `name`, connects to it with `master`'s credentials and database, and
// checks that it is a master. Each connection gets at most `cap`.
// Errors: backend_unavailable naming what every sentinel said (none answered, none knows the
// name, the one named is a replica); cancelled (`stop`).
result<found_master> find_master(std::span<const target> sentinels, std::size_t& first,
                                 const std::string& name, const target& master,
                                 std::optional<std::chrono::milliseconds> cap,
                                 std::stop_token stop);

}  // namespace dlock::detail::redis
