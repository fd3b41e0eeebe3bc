#pragma once
// memory://NAME -- locks shared by the threads of one process. Sessions opened with the same
// NAME share one store; wake-ups by condition variable, per awaited entry; leases on an
// injectable clock.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "core/backend.hpp"
#include "core/url.hpp"

namespace dlock::detail {

result<std::unique_ptr<backend_session>> open_memory(const url& u, const session_info& info);

// Test hooks. The clock decides lease expiry in store NAME (default: steady_clock::now).
void set_memory_clock(const std::string& store, std::function<steady::time_point()> clock);
// Ends session `session_id`'s lease in store NAME at once, as if it had stopped renewing.
void expire_memory_session(const std::string& store, const std::string& session_id);
// Number of entries of `lock` in store NAME, expired ones included (raw inspection).
std::size_t memory_raw_entries(const std::string& store, const std::string& lock);
// How many times, in store NAME, a waiting thread was woken because an entry it awaited left.
std::uint64_t memory_waiters_woken(const std::string& store);

}  // namespace dlock::detail
