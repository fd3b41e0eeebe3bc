#pragma once
// sqlite:///path/to/locks.db -- the embedded default: processes on one host share a file.

#include <memory>

#include "core/backend.hpp"
#include "core/url.hpp"

namespace dlock::detail {

result<std::unique_ptr<backend_session>> open_sqlite(const url& u, const session_info& info);

}  // namespace dlock::detail
