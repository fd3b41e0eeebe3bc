#pragma once
// The fixture of the SQL fault tests (fault_tests.cpp, renewal_check_tests.cpp): one server per
// test executable (sql_admin.hpp), its schema created by the "dlock" user first.

#include <gtest/gtest.h>

#include <chrono>
#include <dlock/dlock.hpp>
#include <mutex>
#include <string>

#include "sql/sql_admin.hpp"
#include "support/net.hpp"

namespace dlock::test {

using namespace std::chrono_literals;

// Retries outlast a server restart, so the tests see the backend's behaviour, not the
// default retry budget running out.
inline session_options patient(std::chrono::milliseconds request_timeout = 2s) {
  return {.request_timeout = request_timeout, .retry = {.max_attempts = 1000}};
}

class sql_faults : public ::testing::Test {
 protected:
  void SetUp() override {
    // The "dlock" user creates the schema, so the other test users find it.
    static std::once_flag once;
    std::call_once(once, [] { session::open(admin().url("dlock", "secret")).close(); });
  }
  std::string name(const std::string& stem) { return stem + "-" + random_suffix(); }
};

}  // namespace dlock::test
