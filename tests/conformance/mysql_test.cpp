// The conformance suite on mysql:// (a MariaDB server started for this executable).
#include "conformance/suite.hpp"
#include "support/mariadb_server.hpp"

namespace dlock::test {
namespace {

mariadb_server& server() {
  static mariadb_server s;
  return s;
}

class mysql_fixture : public backend_fixture {
 public:
  std::string url() override { return server().url("ttl=2s"); }
  std::size_t raw_entries(const std::string& lock) override {
    try {
      return std::stoul(server()
                            .query("SELECT count(*) FROM dlock.dlock_entries e"
                                   " WHERE name = CAST(? AS BINARY)"
                                   // Queued only: a released entry's row goes with its
                                   // session's next commit (my_schema.cpp, DLOCK_QUEUED).
                                   " AND (e.bell = 0 OR IS_USED_LOCK(CONCAT('dlock:e:', "
                                   "LEFT(SHA2(e.id, 256), 40))) IS NOT NULL)",
                                   {lock})
                            .at(0));
    } catch (const std::runtime_error&) {
      return 0;  // no table yet: nothing stored
    }
  }
  void expire(const dlock::session& s) override {
    server().query(
        "UPDATE dlock.dlock_sessions SET expires_ms = CAST(UNIX_TIMESTAMP(NOW(6)) * 1000 AS SIGNED)"
        " - 1000 WHERE id = ?",
        {s.id()});
  }
  // One process answers every connection (each a thread of it).
  std::unique_ptr<stalled_server> stall() override {
    return std::make_unique<stopped_process>(server().pid());
  }
};

INSTANTIATE_TEST_SUITE_P(mysql, conformance,
                         ::testing::Values(fixture_param{
                             "mysql", [] { return std::make_unique<mysql_fixture>(); }}),
                         param_name);

}  // namespace
}  // namespace dlock::test
