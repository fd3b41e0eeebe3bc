// dlock observe on the embedded default follows its file: an observer holds nothing, so it need
// not end with the file it opened, and must not watch a view that can no longer change.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "cli_harness.hpp"

namespace dlock::test {
namespace {

using namespace std::chrono_literals;

std::vector<std::string> electing(const std::string& url, const std::string& value) {
  return {"elect", "e1", "--url", url, "--value", value, "--", "sleep", "30"};
}

// A user who may only read the file (root's 0644 file in a directory it may not write) opens
// it as a snapshot while no writer has made the WAL index it may not create itself: a tester's
// `dlock observe` as nobody printed "no leader" for ever while `dlock leader` saw the leader.
TEST(CliObserveFile, AReadOnlyObserverOfAnIdleFileSeesTheNextLeader) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root, to observe as nobody (setpriv)";
  cli_sandbox box;
  const std::string db = box.dir() + "/locks.db", url = "sqlite://" + db;
  ASSERT_EQ(box.run({"run", "warm", "--url", url, "--", "true"}).status, 0);
  ASSERT_NE(::access((db + "-wal").c_str(), F_OK), 0) << "a writer's WAL is left: not idle";
  ASSERT_EQ(::chmod(box.dir().c_str(), 0755), 0);
  ASSERT_EQ(::chmod(db.c_str(), 0644), 0);
  auto o = box.start_through({"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"},
                             {"observe", "e1", "--url", url});
  EXPECT_NE(o.wait_for_line_with("no leader", 30s).value_or(""), "");
  auto e = box.start(electing(url, "v1"));
  EXPECT_NE(o.wait_for_line_with("leader \"v1\"", 30s).value_or(""), "")
      << "the observer watched a snapshot";
  e.signal(SIGTERM);
  e.wait(30s);
  o.signal(SIGTERM);
  EXPECT_EQ(o.wait(30s), 0);
}

// The file deleted and made again (a clean-up of the lock file): the observer follows the
// path to the new file, where the tester's observer stayed on the old one and saw nothing. The
// new file's leader has token 1 again, as the old one's had: a second tester's observer took
// it for the old leader (leaders compared by token and version only).
TEST(CliObserveFile, AnObserverFollowsItsPathToAFileMadeAgain) {
  cli_sandbox box;
  const std::string db = box.dir() + "/locks.db", url = "sqlite://" + db;
  auto a = box.start(electing(url, "in-the-old-file"));
  auto o = box.start({"observe", "e1", "--url", url});
  EXPECT_NE(o.wait_for_line_with("leader \"in-the-old-file\"  token 1", 30s).value_or(""), "");
  for (const char* suffix : {"", "-wal", "-shm"}) std::remove((db + suffix).c_str());
  auto b = box.start(electing(url, "in-the-new-file"));
  EXPECT_NE(o.wait_for_line_with("leader \"in-the-new-file\"  token 1", 30s).value_or(""), "")
      << "the observer stayed on the deleted file, or took the new leader for the old one";
  for (auto* e : {&a, &b}) {
    e->signal(SIGTERM);
    e->wait(30s);
  }
  o.signal(SIGTERM);
  EXPECT_EQ(o.wait(30s), 0);
}

}  // namespace
}  // namespace dlock::test
