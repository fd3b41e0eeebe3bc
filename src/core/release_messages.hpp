#pragma once
// What a release that was not confirmed tells its caller (lock_handle::release): a server it
// could not reach, or one that answered and refused.
#include <chrono>
#include <optional>
#include <string>

#include "core/result.hpp"

namespace dlock::detail {

// The removal was not confirmed (no answer): the lease frees the lock within the TTL.
std::string unconfirmed_message(const std::string& name, std::chrono::milliseconds ttl,
                                const std::optional<failure>& last);
// The server answered and refused the removal; `session_ended`: dlock ended the session so
// that the server drops the entry.
std::string refused_message(const std::string& name, std::chrono::milliseconds ttl,
                            const failure& why, bool session_ended);

}  // namespace dlock::detail
