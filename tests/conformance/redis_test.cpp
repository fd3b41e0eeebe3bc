// The conformance suite on redis:// (one real redis-server for the whole executable; each
// test gets a key prefix of its own).
#include "conformance/suite.hpp"
#include "support/redis_server.hpp"

namespace dlock::test {
namespace {

redis_server& server() {
  static redis_server s;
  return s;
}

class redis_fixture : public backend_fixture {
 public:
  std::string url() override {
    return "redis://" + server().address() + "?ttl=2s&prefix=" + prefix_;
  }
  std::size_t raw_entries(const std::string& lock) override {
    return server().entry_ids(prefix_, lock).size();
  }
  void expire(const dlock::session& s) override {
    server().command({"DEL", prefix_ + "s:" + s.id()});
  }
  std::unique_ptr<stalled_server> stall() override {
    return std::make_unique<stopped_process>(server().pid());
  }

 private:
  std::string prefix_ = "c" + random_suffix() + ":";
};

INSTANTIATE_TEST_SUITE_P(redis, conformance,
                         ::testing::Values(fixture_param{
                             "redis", [] { return std::make_unique<redis_fixture>(); }}),
                         param_name);

}  // namespace
}  // namespace dlock::test
