// The conformance suite on zk:// against a standalone ZooKeeper started for this executable.
#include "conformance/suite.hpp"
#include "zookeeper/zk_env.hpp"

namespace dlock::test {
namespace {

class zookeeper_fixture : public backend_fixture {
 public:
  // A chroot per test: each test sees an empty tree.
  std::string url() override {
    return "zk://" + shared_zk().hosts() + chroot_ + "?session_timeout=2s";
  }
  std::size_t raw_entries(const std::string& lock) override {
    return raw().children(chroot_ + lock_node(lock)).size();
  }
  void expire(const dlock::session& s) override { expire_zk_session(s, shared_zk().hosts()); }
  std::unique_ptr<stalled_server> stall() override {
    return std::make_unique<stopped_process>(shared_zk().pid());
  }

 private:
  raw_zk& raw() {
    if (!raw_) raw_ = std::make_unique<raw_zk>(shared_zk().hosts());
    return *raw_;
  }
  std::string chroot_ = "/conformance-" + random_suffix();
  std::unique_ptr<raw_zk> raw_;
};

INSTANTIATE_TEST_SUITE_P(zookeeper, conformance,
                         ::testing::Values(fixture_param{
                             "zookeeper", [] { return std::make_unique<zookeeper_fixture>(); }}),
                         param_name);

}  // namespace
}  // namespace dlock::test
