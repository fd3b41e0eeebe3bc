// dlock --help: what it points a reader to exists.
#include <gtest/gtest.h>

#include "cli_harness.hpp"

namespace dlock::test {
namespace {

// Someone who built with `make demo` has installed nothing: the footer's `man -l` path must
// be the man page's real place in the source tree, or its advice fails them.
TEST(CliHelp, FooterNamesTheManPageInTheSourceTree) {
  cli_sandbox box;
  auto r = box.run({"--help"});
  EXPECT_EQ(r.status, 0) << r.output;
  ASSERT_FALSE(r.lines().empty());
  const std::string footer = r.lines().back();
  EXPECT_NE(footer.find("man dlock"), std::string::npos) << footer;
  const std::string cue = "man -l ";
  auto at = footer.find(cue);
  ASSERT_NE(at, std::string::npos) << footer;
  at += cue.size();
  std::string page = footer.substr(at, footer.find_first_of(") ", at) - at);
  EXPECT_TRUE(file_exists(std::string(DLOCK_SOURCE_DIR) + "/" + page)) << page;
  EXPECT_LE(footer.size(), 80u) << "fits a terminal: " << footer;
}

}  // namespace
}  // namespace dlock::test
