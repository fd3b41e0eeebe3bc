// Bad database paths for sqlite://: a directory, a device or pipe, a file this user may not
// write or read. Each is named with what was wrong and a sysexits code; nothing is created.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "bad_input.hpp"
#include "cli_harness.hpp"

namespace dlock::test {
namespace {

TEST(CliBadInput, UnwritableDatabasePathExits77) {
  cli_sandbox box;
  // A path under a regular file cannot be created, even by root (CI runs as root).
  std::string file = box.dir() + "/plain-file";
  std::ofstream(file) << "x";
  expect_rejected(
      box,
      {{"run", "x", "--url", "sqlite://" + file + "/locks.db", "--", "echo", "CMD-RAN"}, 77, file});
  expect_rejected(box, {{"status", "x", "--url", "sqlite://" + file + "/locks.db"}, 77, file});
}

// A URL whose path is a directory (sqlite:///tmp) is a wrong URL like a missing directory
// (64), not "unable to open database file" (77) or "disk I/O error" (69) from SQLite.
TEST(CliBadInput, DirectoryAsDatabasePathExits64) {
  cli_sandbox box;
  std::string dir = box.dir() + "/a-directory";
  ASSERT_EQ(::mkdir(dir.c_str(), 0700), 0);
  for (const std::string& url : {"sqlite://" + dir, "sqlite://" + dir + "/"}) {
    std::string path = url.substr(std::string("sqlite://").size());
    std::string said = "'" + path +
                       "' is a directory, not a database file (name a file in it, e.g. sqlite://" +
                       dir + "/locks.db)";
    for (const auto& args :
         std::vector<std::vector<std::string>>{{"run", "x", "--url", url, "--", "echo", "CMD-RAN"},
                                               {"unlock", "x", "--force", "--yes", "--url", url},
                                               {"status", "x", "--url", url},
                                               {"list", "--url", url},
                                               {"doctor", url}}) {
      expect_rejected(box, {args, 64, said});
    }
  }
  EXPECT_TRUE(std::filesystem::is_empty(dir)) << "nothing may be created in the directory";
}

// A device, a pipe or a socket as the database (sqlite:///dev/null) is a wrong URL too: it
// was "disk I/O error", exit 69, as if the backend had failed (a tester's).
TEST(CliBadInput, ADeviceOrPipeAsDatabasePathExits64) {
  cli_sandbox box;
  std::string fifo = box.dir() + "/a-pipe";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  for (const std::string& path : {std::string("/dev/null"), fifo}) {
    const auto url = "sqlite://" + path;
    expect_rejected(box, {{"run", "x", "--url", url, "--", "echo", "CMD-RAN"},
                          64,
                          "'" + path + "' is not a regular file"});
    expect_rejected(box, {{"status", "x", "--url", url}, 64, "is not a regular file"});
  }
}

// Another user's database: SQLite says only "unable to open database file"; dlock names the
// file or directory refused, its mode and owner, and who asked (exit 77). As root (CI), dlock
// runs as nobody through setpriv; otherwise the file is made unreadable to its owner.
TEST(CliBadInput, ForeignDatabaseNamesModeOwnerAndUserExits77) {
  cli_sandbox box;
  std::string db = box.dir() + "/locks.db";
  ASSERT_EQ(box.run({"run", "x", "--url", "sqlite://" + db, "--", "true"}).status, 0);
  ASSERT_EQ(::chmod(box.dir().c_str(), 0755), 0);
  ASSERT_EQ(::chmod(db.c_str(), 0600), 0);
  std::vector<std::string> as;
  if (::geteuid() == 0) {
    as = {"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"};
  } else {
    ASSERT_EQ(::chmod(db.c_str(), 0000), 0);
  }
  auto run_as = [&](const std::vector<std::string>& args) { return box.run_through(as, args); };
  for (auto args :
       {std::vector<std::string>{"status", "x", "--url", "sqlite://" + db},
        std::vector<std::string>{"run", "x", "--url", "sqlite://" + db, "--", "echo", "CMD-RAN"}}) {
    auto r = run_as(args);
    EXPECT_EQ(r.status, 77) << r.output;
    ASSERT_EQ(r.lines().size(), 1u) << r.output;
    EXPECT_NE(r.output.find("permission denied"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("mode 0"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("this process runs as"), std::string::npos) << r.output;
    EXPECT_EQ(r.output.find("CMD-RAN"), std::string::npos) << r.output;
  }
}

// A tester (2026-12-06): a run refused (77) on a file it may only read, in a directory it may
// write, left -wal and -shm files beside it. A refused run makes nothing.
TEST(CliBadInput, AReadOnlyDatabaseIsRefusedWithoutMakingFilesBesideIt) {
  if (::geteuid() != 0) GTEST_SKIP() << "runs dlock as another user through setpriv (root only)";
  cli_sandbox box;
  std::string db = box.dir() + "/locks.db";
  ASSERT_EQ(box.run({"run", "x", "--url", "sqlite://" + db, "--", "true"}).status, 0);
  ASSERT_FALSE(file_exists(db + "-wal") || file_exists(db + "-shm"));
  ASSERT_EQ(::chmod(box.dir().c_str(), 0777), 0);
  ASSERT_EQ(::chmod(db.c_str(), 0644), 0);
  auto r = box.run_through({"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"},
                           {"run", "x", "--url", "sqlite://" + db, "--", "echo", "CMD-RAN"});
  EXPECT_EQ(r.status, 77) << r.output;
  EXPECT_NE(r.output.find("permission denied"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("CMD-RAN"), std::string::npos) << r.output;
  EXPECT_FALSE(file_exists(db + "-wal")) << r.output;
  EXPECT_FALSE(file_exists(db + "-shm")) << r.output;
}

}  // namespace
}  // namespace dlock::test
