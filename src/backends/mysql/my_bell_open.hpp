#pragma once
// A doorbell connection opened without holding its waiter past its deadline (my_bell.hpp).
// libmariadb's connect cannot be cut off from another thread, and a server that stops
// answering during one held the waiter for the handshake's read timeout: CI-46 saw a 1.5 s
// wait take 7 s. So the connect runs on a thread of its own, and the waiter waits for it only
// until its deadline, its stop or the pool's close; a connection that comes too late is
// closed by that thread.
//
// Threads: any; each call may leave one detached thread behind, which ends with its connect.

#include <chrono>
#include <memory>
#include <stop_token>

#include "backends/mysql/my_conn.hpp"

namespace dlock::detail::my {

// Connects as `t` says (within `timeout`, and by `until` when it is not max()), or returns
// nullptr: refused, failed, or given up at `until`, `stop` or `closing`.
std::unique_ptr<conn> open_aside(const target& t, std::chrono::milliseconds timeout,
                                 std::chrono::steady_clock::time_point until,
                                 const std::stop_token& stop, const std::stop_token& closing);

}  // namespace dlock::detail::my
