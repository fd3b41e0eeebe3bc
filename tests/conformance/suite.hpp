#pragma once
// The conformance suite: one set of behaviours every backend must show, written once.
// A backend joins by providing a backend_fixture and instantiating the suite:
//
//   INSTANTIATE_TEST_SUITE_P(memory, conformance,
//       ::testing::Values(dlock::test::fixture_param{"memory", [] { return make_fixture(); }}),
//       dlock::test::param_name);

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "conformance/fixture.hpp"
#include "support/net.hpp"
#include "support/poll.hpp"
#include "support/process.hpp"

namespace dlock::test {

using namespace std::chrono_literals;

class conformance : public ::testing::TestWithParam<fixture_param> {
 protected:
  void SetUp() override {
    fx_ = GetParam().make();
    prefix_ = "t" + random_suffix() + "/";
  }
  void TearDown() override { fx_.reset(); }

  backend_fixture& fx() { return *fx_; }
  // What the backend says it provides (FIFO, shared locks, ...): the suite checks a property
  // where the backend claims it, and that it refuses what it disclaims.
  const dlock::backend_capabilities& caps() {
    if (!caps_) caps_ = open().capabilities();
    return *caps_;
  }
  // A lock name unique to this test.
  std::string lock_name(const std::string& base = "lock") const { return prefix_ + base; }
  dlock::session open() { return dlock::session::open(fx_->url()); }
  // A dlock_test_worker process.
  child_process worker(const std::vector<std::string>& args) {
    std::vector<std::string> argv{DLOCK_TEST_WORKER};
    argv.insert(argv.end(), args.begin(), args.end());
    return child_process(argv);
  }

 private:
  std::unique_ptr<backend_fixture> fx_;
  std::string prefix_;
  std::optional<dlock::backend_capabilities> caps_;
};

// The token of a dlock_test_worker's "granted TOKEN" line; 0 for anything else.
inline std::uint64_t token_of(const std::optional<std::string>& line) {
  if (!line || !line->starts_with("granted ")) return 0;
  return std::stoull(line->substr(8));
}

inline std::string param_name(const ::testing::TestParamInfo<fixture_param>& info) {
  return info.param.name;
}

// Requires real processes sharing locks through the backend.
#define DLOCK_REQUIRE_MULTI_PROCESS()                                                        \
  do {                                                                                       \
    if (caps().scope == dlock::reach::process) GTEST_SKIP() << "backend is in-process only"; \
  } while (0)

}  // namespace dlock::test
