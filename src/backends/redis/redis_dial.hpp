#pragma once
// The TCP connect of a Redis connection, done here rather than by hiredis so that it can be
// given up at once: hiredis's connect blocks for its whole timeout, and a session that
// expires meanwhile (a link that drops SYNs) must tell its contender promptly. The connected
// socket is handed to hiredis (redisConnectFd), which then owns it.

#include <chrono>
#include <stop_token>

#include "backends/redis/redis_config.hpp"
#include "core/result.hpp"

namespace dlock::detail::redis {

// A blocking TCP socket (TCP_NODELAY, close-on-exec) connected to t.host:t.port within
// `timeout`, trying each resolved address in turn.
// Errors: backend_unavailable (unresolvable, refused, unreachable, no connection within
// `timeout`: then `timed_out` is set), cancelled (`stop` requested).
result<int> dial(const target& t, std::chrono::milliseconds timeout, std::stop_token stop,
                 bool& timed_out);

}  // namespace dlock::detail::redis
