#pragma once
// `dlock doctor` for PostgreSQL: commit durability (synchronous_commit, fsync), standbys, a
// replica as target, the route (a pooler) and the server's clock.

#include <dlock/doctor.hpp>
#include <vector>

#include "backends/postgres/pg_conn.hpp"

namespace dlock::detail::pg {

// One query on `c`; `pooled` and `direct` are what the session found at open (probe_route).
result<std::vector<check_finding>> findings(conn& c, bool pooled, bool direct);

}  // namespace dlock::detail::pg
