#pragma once
// A throw-away PgBouncer (Debian `pgbouncer`, /usr/sbin/pgbouncer) in front of a test
// PostgreSQL server: its own temporary directory, config and auth file, listening on a free
// loopback port, pooling database "dlock" for user "dlock" (password "secret"). It ignores
// the startup parameters `extra_float_digits,options` (a common setting: without it PgBouncer
// refuses libpq's `options`). PgBouncer refuses to run as root, so as root it switches to
// user postgres (its -u).

#include <cstdint>
#include <memory>
#include <string>

#include "support/net.hpp"
#include "support/postgres_server.hpp"
#include "support/process.hpp"
#include "support/reaper.hpp"

namespace dlock::test {

class pgbouncer {
 public:
  // `pool_mode`: "transaction" or "session"; `settings`: more lines for the [pgbouncer]
  // section, each "key = value\n", overriding the defaults above. Throws std::runtime_error
  // (with PgBouncer's log) if it does not start, also when it is not installed.
  pgbouncer(const postgres_server& server, const std::string& pool_mode,
            const std::string& settings = "");
  pgbouncer(const pgbouncer&) = delete;
  ~pgbouncer();

  std::uint16_t port() const { return port_; }
  // postgres://dlock:secret@127.0.0.1:PORT/dlock?<query>, through the pooler.
  std::string url(const std::string& query = "") const;
  std::string log() const;

 private:
  temp_dir dir_{"dlock-pgbouncer"};
  reaper reaper_{dir_.path()};
  std::uint16_t port_{0};
  std::unique_ptr<child_process> proc_;
};

}  // namespace dlock::test
