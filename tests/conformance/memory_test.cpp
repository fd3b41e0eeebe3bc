// The conformance suite on memory:// (threads of one process).
#include "backends/memory/memory_backend.hpp"
#include "conformance/suite.hpp"

namespace dlock::test {
namespace {

class memory_fixture : public backend_fixture {
 public:
  std::string url() override { return "memory://" + store_ + "?ttl=2s"; }
  std::size_t raw_entries(const std::string& lock) override {
    return dlock::detail::memory_raw_entries(store_, lock);
  }
  void expire(const dlock::session& s) override {
    dlock::detail::expire_memory_session(store_, s.id());
  }

 private:
  std::string store_ = "conformance-" + random_suffix();
};

INSTANTIATE_TEST_SUITE_P(memory, conformance,
                         ::testing::Values(fixture_param{
                             "memory", [] { return std::make_unique<memory_fixture>(); }}),
                         param_name);

}  // namespace
}  // namespace dlock::test
