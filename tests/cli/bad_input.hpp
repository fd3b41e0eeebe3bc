#pragma once
// Bad input's common check: a one-line error naming what was wrong, its exit status, and the
// command never run.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cli_harness.hpp"

namespace dlock::test {

struct bad_case {
  std::vector<std::string> args;
  int status;
  std::string mentions;  // the error line names what was wrong
};

inline void expect_rejected(const cli_sandbox& box, const bad_case& c) {
  std::string shown;
  for (auto& a : c.args) shown += a + " ";
  auto r = box.run(c.args);
  EXPECT_EQ(r.status, c.status) << shown << "\n" << r.output;
  ASSERT_EQ(r.lines().size(), 1u) << shown << "\n" << r.output;
  EXPECT_TRUE(r.output.starts_with("dlock: ")) << r.output;
  EXPECT_NE(r.output.find(c.mentions), std::string::npos) << shown << "\n" << r.output;
  EXPECT_EQ(r.output.find("CMD-RAN"), std::string::npos) << "the command must not run";
}

}  // namespace dlock::test
