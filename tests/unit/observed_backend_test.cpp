// The request decorator (src/core/observed_backend.cpp) must forward every virtual member of
// backend_session: one it leaves to the base's default would silently replace the wrapped
// backend's own behaviour whenever an observer is installed (a ZooKeeper mutex would be
// enqueued as a writer). The compiler cannot see that, so this reads both sources.
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

namespace {

std::string source(const std::string& relative) {
  std::ifstream in(std::string(DLOCK_SOURCE_DIR) + "/" + relative);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The names of the functions declared with `pattern` (its group 1).
std::set<std::string> names(const std::string& text, const std::regex& pattern) {
  std::set<std::string> out;
  for (std::sregex_iterator it(text.begin(), text.end(), pattern), end; it != end; ++it) {
    out.insert((*it)[1]);
  }
  return out;
}

TEST(observed_backend, forwards_every_virtual_member_of_backend_session) {
  auto base = source("src/core/backend.hpp");
  auto wrapper = source("src/core/observed_backend.cpp");
  ASSERT_FALSE(base.empty());
  ASSERT_FALSE(wrapper.empty());
  // "virtual <type> name(" (types may span `<...>` and `::`), skipping the destructor.
  auto declared = names(base, std::regex(R"(virtual\s+[\w:<>,\s\*&]+?\s(\w+)\s*\()"));
  auto forwarded =
      names(wrapper, std::regex(R"((\w+)\s*\([^;{]*\)\s*(?:const\s*)?(?:noexcept\s*)?override)"));
  EXPECT_GE(declared.size(), 15u) << "the pattern no longer reads backend.hpp";
  for (const auto& n : declared) {
    EXPECT_TRUE(forwarded.count(n)) << "observed_backend does not forward " << n;
  }
}

}  // namespace
