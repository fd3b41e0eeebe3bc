#pragma once
// `dlock doctor` for MySQL/MariaDB: commit durability (innodb_flush_log_at_trx_commit,
// sync_binlog), a read-only replica as target, and the server's clock.

#include <dlock/doctor.hpp>
#include <vector>

#include "backends/mysql/my_conn.hpp"

namespace dlock::detail::my {

// One query on `c`; `advisory` says how a dead holder is freed (GET_LOCK, or lease rows).
result<std::vector<check_finding>> findings(conn& c, bool advisory);

}  // namespace dlock::detail::my
