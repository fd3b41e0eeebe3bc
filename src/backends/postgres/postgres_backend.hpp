#pragma once
// postgres://user:password@host:port/db?schema=dlock (also postgresql://) -- lease rows in
// PostgreSQL through libpq, leases on the database clock, waiters woken by LISTEN/NOTIFY.

#include <memory>

#include "core/backend.hpp"
#include "core/url.hpp"

namespace dlock::detail {

result<std::unique_ptr<backend_session>> open_postgres(const url& u, const session_info& info);

}  // namespace dlock::detail
