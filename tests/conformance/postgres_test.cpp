// The conformance suite on postgres:// (a PostgreSQL 15 server started for this executable).
#include "conformance/suite.hpp"
#include "support/postgres_server.hpp"

namespace dlock::test {
namespace {

postgres_server& server() {
  static postgres_server s;
  return s;
}

class postgres_fixture : public backend_fixture {
 public:
  std::string url() override { return server().url("ttl=2s"); }
  std::size_t raw_entries(const std::string& lock) override {
    try {
      return std::stoul(
          server().query("SELECT count(*) FROM dlock.entries WHERE name = $1", {lock}).at(0));
    } catch (const std::runtime_error&) {
      return 0;  // no table yet: nothing stored
    }
  }
  void expire(const dlock::session& s) override {
    server().query(
        "UPDATE dlock.sessions SET expires = clock_timestamp() - interval '1 second'"
        " WHERE id = $1",
        {s.id()});
  }
  std::unique_ptr<stalled_server> stall() override {
    return std::make_unique<stopped_process>(server().processes());
  }
};

INSTANTIATE_TEST_SUITE_P(postgres, conformance,
                         ::testing::Values(fixture_param{
                             "postgres", [] { return std::make_unique<postgres_fixture>(); }}),
                         param_name);

}  // namespace
}  // namespace dlock::test
