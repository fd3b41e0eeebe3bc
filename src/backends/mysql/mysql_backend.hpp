#pragma once
// mysql://user:password@host:port/db (also mariadb://) -- lease rows in MySQL or MariaDB
// through libmariadb, leases on the database clock, waiters poll with jittered backoff.

#include <memory>

#include "core/backend.hpp"
#include "core/url.hpp"

namespace dlock::detail {

result<std::unique_ptr<backend_session>> open_mysql(const url& u, const session_info& info);

}  // namespace dlock::detail
