// The conformance suite on postgres://...?mode=advisory (session-level advisory locks; a
// PostgreSQL 15 server started for this executable). Entries are read raw from pg_locks:
// a holder's advisory lock on the name's key, and each waiting session's shared lock on the
// name's second key (the server keeps no queue of waiters).
#include "conformance/suite.hpp"
#include "support/postgres_server.hpp"

namespace dlock::test {
namespace {

postgres_server& server() {
  static postgres_server s;
  return s;
}

class postgres_advisory_fixture : public backend_fixture {
 public:
  std::string url() override { return server().url("ttl=2s&mode=advisory"); }
  std::size_t raw_entries(const std::string& lock) override {
    return std::stoul(
        server()
            .query("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted"
                   " AND objsubid = 1 AND ((classid::bigint << 32) | objid::bigint) IN"
                   // The schema is dlock_adv (support/mode_apart.hpp).
                   " (hashtextextended('dlock_adv:' || $1, 0),"
                   " hashtextextended('dlock_adv:' || $1, 1))",
                   {lock})
            .at(0));
  }
  // An advisory lock lives as long as its connection: ending the session's lease from the
  // server side is terminating that connection.
  void expire(const dlock::session& s) override {
    server().query(
        "SELECT pg_terminate_backend(pid, 5000) FROM pg_stat_activity"
        " WHERE application_name = 'dlock:' || $1",
        {s.id()});
  }
  // Until 2026-12-07 a timed waiter's try after each nap ran on the session's own connection,
  // the lease, which a stopped server held until the request timeout and then ended: these
  // tests failed by timing (an ASan run threw session_expired). It now asks a second
  // connection whether the lock is still held first.
  std::unique_ptr<stalled_server> stall() override {
    return std::make_unique<stopped_process>(server().processes());
  }
};

INSTANTIATE_TEST_SUITE_P(postgres_advisory, conformance,
                         ::testing::Values(fixture_param{
                             "postgres_advisory",
                             [] { return std::make_unique<postgres_advisory_fixture>(); }}),
                         param_name);

}  // namespace
}  // namespace dlock::test
