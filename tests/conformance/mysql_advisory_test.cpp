// The conformance suite on mysql://...?mode=advisory (named locks; a MariaDB server started
// for this executable). Entries are read raw from information_schema.METADATA_LOCK_INFO (the
// metadata_lock_info plugin, installed here): a holder's named lock on the name's hash, and
// each waiting connection's "dlockw:" mark on it (the server keeps no queue of waiters).
#include "conformance/suite.hpp"
#include "support/mariadb_server.hpp"

namespace dlock::test {
namespace {

mariadb_server& server() {
  static mariadb_server s;
  static bool plugin = [] {
    s.query("INSTALL SONAME 'metadata_lock_info'");
    return true;
  }();
  (void)plugin;
  return s;
}

class mysql_advisory_fixture : public backend_fixture {
 public:
  std::string url() override { return server().url("ttl=2s&mode=advisory"); }
  std::size_t raw_entries(const std::string& lock) override {
    return std::stoul(
        server()
            .query("SELECT count(*) FROM information_schema.METADATA_LOCK_INFO m,"
                   " (SELECT LEFT(SHA2(CONCAT('dlock:', ?), 256), 36) AS h) k"
                   " WHERE m.LOCK_TYPE = 'User lock' AND (m.TABLE_SCHEMA = CONCAT('dlock:', k.h)"
                   " OR m.TABLE_SCHEMA LIKE CONCAT('dlockw:', k.h, ':%'))",
                   {lock})
            .at(0));
  }
  // A named lock lives as long as its connection: ending the session's lease from the server
  // side is killing that connection (found by the session lock it holds).
  void expire(const dlock::session& s) override {
    auto id = server().query("SELECT IS_USED_LOCK(CONCAT('dlock_session:', ?))", {s.id()}).at(0);
    if (!id.empty() && id.find_first_not_of("0123456789") == std::string::npos) {
      server().query("KILL " + id);
    }
  }
  // No server-side queue and no NOTIFY: waiters poll, and whichever retries first after a
  // release wins, so arrival order is not kept (documented in my_advisory.hpp and the
  // README). Exclusion, fencing, loss signals and crash recovery are tested as for every
  // backend.
  bool fifo() const override { return false; }
  // GET_LOCK is exclusive only: shared_mutex is refused with errc::unsupported (checked by
  // the first shared test) rather than emulated.
  bool shared_locks() const override { return false; }
};

INSTANTIATE_TEST_SUITE_P(mysql_advisory, conformance,
                         ::testing::Values(fixture_param{
                             "mysql_advisory",
                             [] { return std::make_unique<mysql_advisory_fixture>(); }}),
                         param_name);

}  // namespace
}  // namespace dlock::test
