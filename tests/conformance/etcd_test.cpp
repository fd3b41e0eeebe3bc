// The conformance suite on etcd:// (one real etcd member for the whole executable; each test
// gets a key prefix of its own).
#include "conformance/suite.hpp"
#include "etcd/etcd_env.hpp"

namespace dlock::test {
namespace {

class etcd_fixture : public backend_fixture {
 public:
  std::string url() override {
    return "etcd://" + shared_etcd().address() + "/" + prefix_ + "?ttl=2s";
  }
  std::size_t raw_entries(const std::string& lock) override {
    return shared_etcd().keys(prefix_ + "/" + lock + "/").size();
  }
  void expire(const dlock::session& s) override { expire_etcd_session(s, shared_etcd()); }
  std::unique_ptr<stalled_server> stall() override {
    return std::make_unique<stopped_process>(shared_etcd().pid());
  }

 private:
  std::string prefix_ = "c" + random_suffix();
};

INSTANTIATE_TEST_SUITE_P(etcd, conformance,
                         ::testing::Values(fixture_param{
                             "etcd", [] { return std::make_unique<etcd_fixture>(); }}),
                         param_name);

}  // namespace
}  // namespace dlock::test
