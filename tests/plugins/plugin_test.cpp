// The core finding backends by scheme (docs/plugins.md). Which plug-ins a process has loaded
// is process-wide state, so ctest runs each case in a process of its own (--gtest_filter);
// each sets DLOCK_PLUGIN_PATH before its first session.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <dlock/dlock.hpp>
#include <filesystem>
#include <fstream>
#include <string>

namespace {

void plugin_path(const std::string& dirs) { ::setenv("DLOCK_PLUGIN_PATH", dirs.c_str(), 1); }

std::string open_error(const std::string& url, std::error_code* code = nullptr) {
  try {
    (void)dlock::session::open(url);
  } catch (const dlock::system_error& e) {
    if (code != nullptr) *code = e.code();
    return e.what();
  }
  return {};
}

}  // namespace

TEST(plugins, a_plugin_built_for_another_version_is_refused_not_run) {
  // Listed first, the old libdlock-redis is the one found; refused, not skipped for the good
  // one next to libdlock.
  plugin_path(DLOCK_MISMATCH_PLUGIN_DIR);
  std::error_code code;
  auto what = open_error("redis://127.0.0.1:1", &code);
  EXPECT_EQ(code, dlock::errc::backend_unavailable) << what;
  EXPECT_NE(what.find("the redis backend (" DLOCK_MISMATCH_PLUGIN_DIR "/libdlock-redis.so.0)"
                      " was built for dlock 0.0.0-other"),
            std::string::npos)
      << what;
  EXPECT_NE(what.find("install the libdlock-redis of dlock " DLOCK_VERSION_STRING),
            std::string::npos)
      << what;
  // Asked again, the same answer (the refusal is remembered, the library not run).
  auto again = open_error("redlock://127.0.0.1:1,127.0.0.1:2,127.0.0.1:3");
  auto from = [](const std::string& w) { return w.substr(w.find("the redis backend")); };
  EXPECT_EQ(from(again), from(what));
}

TEST(plugins, a_third_party_plugin_is_found_through_DLOCK_PLUGIN_PATH) {
  plugin_path(std::string("/nonexistent:") + DLOCK_EXTRA_PLUGIN_DIR);
  auto s = dlock::session::open("testmem://plugins?ttl=5s");
  dlock::mutex m(s, "job");
  ASSERT_TRUE(m.try_lock());
  EXPECT_GT(m.token().value, 0u);
  m.unlock();
  // Its own parameters are checked as the built-in backends' are.
  std::error_code code;
  auto what = open_error("testmem://plugins?colour=red", &code);
  EXPECT_EQ(code, dlock::errc::invalid_argument) << what;
  EXPECT_NE(what.find("unknown parameter 'colour' for testmem (known: ttl keepalive color)"),
            std::string::npos)
      << what;
}

TEST(plugins, without_DLOCK_PLUGIN_PATH_a_third_party_scheme_is_unknown) {
  ::unsetenv("DLOCK_PLUGIN_PATH");
  std::error_code code;
  auto what = open_error("testmem://plugins", &code);
  EXPECT_EQ(code, dlock::errc::invalid_argument) << what;
  EXPECT_NE(what.find("unknown scheme 'testmem'"), std::string::npos) << what;
}

TEST(plugins, a_file_that_is_not_a_loadable_plugin_is_named) {
  auto dir =
      std::filesystem::temp_directory_path() / ("dlock-plugin-test-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "libdlock-zookeeper.so.0") << "not an ELF file";
  plugin_path(dir.string());
  std::error_code code;
  auto what = open_error("zk://127.0.0.1:1", &code);
  std::filesystem::remove_all(dir);
  EXPECT_EQ(code, dlock::errc::backend_unavailable) << what;
  EXPECT_NE(what.find("the zookeeper backend (" + (dir / "libdlock-zookeeper.so.0").string() +
                      ") cannot be loaded"),
            std::string::npos)
      << what;
}

TEST(plugins, the_build_tree_plugins_are_found_next_to_libdlock) {
  ::unsetenv("DLOCK_PLUGIN_PATH");
  // Nothing listens on port 1: the plug-in was found and ran (a connection error, not a
  // missing backend).
  std::error_code code;
  auto what = open_error("redis://127.0.0.1:1?ttl=2s", &code);
  EXPECT_EQ(code, dlock::errc::backend_unavailable) << what;
  EXPECT_EQ(what.find("not installed"), std::string::npos) << what;
  EXPECT_NE(what.find("127.0.0.1:1"), std::string::npos) << what;
}
