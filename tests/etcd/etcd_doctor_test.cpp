// dlock::diagnose on etcd (issue 16): Raft, the lease and the shared key layout speak to
// failover, exclusion and interop; a capability alone would say "unknown" and "no".
#include <gtest/gtest.h>

#include <dlock/dlock.hpp>
#include <dlock/doctor.hpp>

#include "etcd/etcd_env.hpp"

namespace dlock::test {
namespace {

guarantee_status status_of(const diagnosis& d, const std::string& name) {
  for (const auto& g : d.guarantees) {
    if (g.name == name) return g.status;
  }
  ADD_FAILURE() << "no guarantee " << name;
  return guarantee_status::unknown;
}

TEST(etcd_doctor, failover_exclusion_and_interop_hold) {
  auto s = session::open("etcd://" + shared_etcd().address());
  auto d = diagnose(s);
  EXPECT_EQ(status_of(d, "failover"), guarantee_status::holds);
  EXPECT_EQ(status_of(d, "exclusion"), guarantee_status::holds);
  EXPECT_EQ(status_of(d, "interop"), guarantee_status::holds);
  EXPECT_EQ(status_of(d, "fencing"), guarantee_status::holds);
  ASSERT_FALSE(d.checks.empty());
  EXPECT_EQ(d.checks.front().value, "1 member in the URL");
}

}  // namespace
}  // namespace dlock::test
