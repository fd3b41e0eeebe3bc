// A SQLite lock file on a file system whose locking SQLite cannot rely on (network, FUSE) is
// refused at open, naming the file system; a real FUSE mount (bindfs over a local directory)
// stands in for NFS, whose f_type check is the same code path.
#include <gtest/gtest.h>
#include <sys/mount.h>

#include <cstdlib>
#include <dlock/dlock.hpp>
#include <string>

#include "support/net.hpp"

namespace dlock::test {
namespace {

class sqlite_file_system : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(std::system("command -v bindfs >/dev/null"), 0)
        << "bindfs is missing (scripts/install-deps.sh installs it)";
    ASSERT_EQ(std::system(("mkdir -p '" + src_ + "' '" + mnt_ + "'").c_str()), 0);
    ASSERT_EQ(std::system(("bindfs '" + src_ + "' '" + mnt_ + "'").c_str()), 0)
        << "cannot mount a FUSE file system here (/dev/fuse)";
    mounted_ = true;
  }
  void TearDown() override {
    if (mounted_ && std::system(("fusermount -u '" + mnt_ + "' 2>/dev/null").c_str()) != 0) {
      ::umount2(mnt_.c_str(), MNT_DETACH);
    }
  }
  temp_dir dir_{"dlock-sqlite-fs"};
  std::string src_ = dir_.path() + "/local";
  std::string mnt_ = dir_.path() + "/fuse";
  bool mounted_{false};
};

TEST_F(sqlite_file_system, a_file_on_a_fuse_mount_is_refused_naming_it) {
  const auto path = mnt_ + "/locks.db";
  for (bool observe : {false, true}) {
    try {
      auto s = dlock::session::open("sqlite://" + path, {.observe_only = observe});
      ADD_FAILURE() << "opened a lock file on FUSE (observe_only=" << observe << ")";
    } catch (const dlock::system_error& e) {
      EXPECT_EQ(e.code(), dlock::errc::unsupported) << e.what();
      EXPECT_NE(std::string(e.what()).find("fuse"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    }
  }
  // Nothing was created there.
  EXPECT_NE(std::system(("test -e '" + src_ + "/locks.db'").c_str()), 0);
}

TEST_F(sqlite_file_system, the_same_directory_reached_locally_works) {
  auto s = dlock::session::open("sqlite://" + src_ + "/locks.db");
  dlock::mutex m(s, "x");
  ASSERT_TRUE(m.try_lock());
  m.unlock();
}

// A read-only mount: no mode or owner explains it (a tester, as root, was shown the
// directory's mode 0755, owned by root), the mount does.
TEST(sqlite_read_only_mount, a_file_there_is_refused_naming_the_read_only_file_system) {
  temp_dir dir{"dlock-sqlite-ro"};
  const auto src = dir.path() + "/src", ro = dir.path() + "/ro";
  ASSERT_EQ(std::system(("mkdir -p '" + src + "' '" + ro + "'").c_str()), 0);
  { auto made = dlock::session::open("sqlite://" + src + "/locks.db"); }
  if (::mount(src.c_str(), ro.c_str(), nullptr, MS_BIND, nullptr) != 0) {
    GTEST_SKIP() << "cannot bind-mount here (needs CAP_SYS_ADMIN)";
  }
  struct unmount {
    std::string at;
    ~unmount() { ::umount2(at.c_str(), MNT_DETACH); }
  } at_exit{ro};
  ASSERT_EQ(::mount(nullptr, ro.c_str(), nullptr, MS_BIND | MS_REMOUNT | MS_RDONLY, nullptr), 0);
  try {
    auto s = dlock::session::open("sqlite://" + ro + "/locks.db");
    ADD_FAILURE() << "opened a lock file on a read-only mount";
  } catch (const dlock::system_error& e) {
    EXPECT_EQ(e.code(), dlock::errc::permission_denied) << e.what();
    EXPECT_NE(std::string(e.what()).find("is on a read-only file system"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace dlock::test
