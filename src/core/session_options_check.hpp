#pragma once
// The options a session opens with: `o` with the query parameters every backend understands
// (`ttl=`, `keepalive=`) merged in, every value checked. invalid_argument names what is wrong.

#include <dlock/session.hpp>

#include "core/result.hpp"
#include "core/url.hpp"

namespace dlock::detail {

result<session_options> apply_query(const url& u, session_options o);

}  // namespace dlock::detail
