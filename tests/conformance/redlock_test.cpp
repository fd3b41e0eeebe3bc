// The conformance suite on redlock:// over three independent redis-servers.
#include <algorithm>
#include <cstdint>

#include "conformance/suite.hpp"
#include "support/redis_server.hpp"

namespace dlock::test {
namespace {

std::vector<std::unique_ptr<redis_server>>& servers() {
  static std::vector<std::unique_ptr<redis_server>> s = [] {
    std::vector<std::unique_ptr<redis_server>> v;
    for (int i = 0; i < 3; ++i) v.push_back(std::make_unique<redis_server>());
    return v;
  }();
  return s;
}

class redlock_fixture : public backend_fixture {
 public:
  std::string url() override {
    std::string hosts;
    for (auto& s : servers()) hosts += (hosts.empty() ? "" : ",") + s->address();
    return "redlock://" + hosts + "?ttl=2s&prefix=" + prefix_;
  }
  // The most entries any master stores (a partial entry counts too).
  std::size_t raw_entries(const std::string& lock) override {
    std::size_t most = 0;
    for (auto& s : servers()) most = std::max(most, s->entry_ids(prefix_, lock).size());
    return most;
  }
  // The fewest entries any master stores: an enqueue reaches the masters one by one.
  std::size_t queued_entries(const std::string& lock) override {
    std::size_t fewest = SIZE_MAX;
    for (auto& s : servers()) fewest = std::min(fewest, s->entry_ids(prefix_, lock).size());
    return fewest;
  }
  void expire(const dlock::session& s) override {
    for (auto& srv : servers()) srv->command({"DEL", prefix_ + "s:" + s.id()});
  }

 private:
  std::string prefix_ = "c" + random_suffix() + ":";
};

INSTANTIATE_TEST_SUITE_P(redlock, conformance,
                         ::testing::Values(fixture_param{
                             "redlock", [] { return std::make_unique<redlock_fixture>(); }}),
                         param_name);

}  // namespace
}  // namespace dlock::test
