// A SQLite holder lives while its process does or a fork of it that shares its session's open
// files (session_mark.hpp; issue 12, item 1): `dlock run`'s guard outlives a SIGKILLed dlock
// until it has killed CMD's group, and the lock must stay held meanwhile. An exec'd child must
// not keep a killed holder's lock: its descriptors are close-on-exec.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <dlock/dlock.hpp>
#include <string>

#include "support/net.hpp"
#include "support/process.hpp"

namespace dlock::test {
namespace {

using namespace std::chrono_literals;

class sqlite_session_mark : public ::testing::Test {
 protected:
  // A lease far longer than any wait here: only the process check can free the lock early.
  std::string url() const { return "sqlite://" + dir_.path() + "/locks.db?ttl=30s"; }

  // A worker process holding "k", and the pid of the child it started with `how`.
  std::pair<child_process, pid_t> holder_with_child(const std::string& how,
                                                    const std::string& holder_url) {
    child_process w({DLOCK_TEST_WORKER, "hold", holder_url, "k"});
    EXPECT_TRUE(w.wait_for_line("granted ", 10s));
    w.write_stdin(how + "\n");
    auto line = w.wait_for_line(how == "fork" ? "forked " : "spawned ", 10s);
    pid_t child = line ? std::stoi(line->substr(line->find(' ') + 1)) : -1;
    EXPECT_GT(child, 0);
    return {std::move(w), child};
  }

  temp_dir dir_{"dlock-sqlite-mark"};
};

TEST_F(sqlite_session_mark, a_fork_keeps_a_killed_holders_lock_until_it_ends) {
  auto [w, child] = holder_with_child("fork", url());
  w.signal(SIGKILL);
  (void)w.wait(10s);
  auto s = session::open(url());
  mutex m(s, "k");
  EXPECT_FALSE(m.try_lock()) << "granted while a fork of the killed holder still runs";
  ::kill(child, SIGKILL);
  EXPECT_TRUE(m.try_lock_for(10s)) << "still held after the fork ended (the lease is 30 s)";
  if (m.is_held()) m.unlock();
}

TEST_F(sqlite_session_mark, an_execd_child_does_not_keep_a_killed_holders_lock) {
  auto [w, child] = holder_with_child("spawn", url());
  w.signal(SIGKILL);
  (void)w.wait(10s);
  auto s = session::open(url());
  mutex m(s, "k");
  EXPECT_TRUE(m.try_lock_for(10s)) << "an exec'd child of the killed holder kept its lock";
  ::kill(child, SIGKILL);
  if (m.is_held()) m.unlock();
}

// The mark lives beside the file itself, as SQLite's -wal and -shm do, however the holder named
// it: a holder that opened the file through a symlink, checked by one that names it directly,
// is still seen alive (it was not: its mark went beside the link).
TEST_F(sqlite_session_mark, a_holder_that_named_the_file_through_a_symlink_is_seen_marked) {
  const auto link = dir_.path() + "/link.db";
  ASSERT_EQ(::symlink((dir_.path() + "/locks.db").c_str(), link.c_str()), 0);
  auto [w, child] = holder_with_child("fork", "sqlite://" + link + "?ttl=30s");
  w.signal(SIGKILL);
  (void)w.wait(10s);
  auto s = session::open(url());
  mutex m(s, "k");
  EXPECT_FALSE(m.try_lock()) << "granted while a fork of the killed holder still runs";
  ::kill(child, SIGKILL);
  EXPECT_TRUE(m.try_lock_for(10s));
  if (m.is_held()) m.unlock();
}

// Containers that share the lock file and the hostname but not the pid namespace (docker
// --network host, a pod on the host network): the pid recorded by a holder in there means
// nothing here -- another process, or none -- so the pid check alone would free its lock at
// once. The mark, a lock on a shared file, is seen across namespaces: it keeps the lock held
// while the holder lives and frees it as soon as the holder dies.
TEST_F(sqlite_session_mark, a_holder_in_another_pid_namespace_is_judged_by_its_mark) {
  if (std::system("unshare -pf --mount-proc true 2>/dev/null") != 0) {
    GTEST_SKIP() << "cannot make a pid namespace here (unshare needs CAP_SYS_ADMIN)";
  }
  child_process w(
      {"unshare", "-pf", "--kill-child", "--mount-proc", DLOCK_TEST_WORKER, "hold", url(), "k"});
  ASSERT_TRUE(w.wait_for_line("granted ", 10s));
  auto s = session::open(url());
  mutex m(s, "k");
  EXPECT_FALSE(m.try_lock()) << "granted while its holder, in another pid namespace, runs";
  w.signal(SIGKILL);
  (void)w.wait(10s);
  EXPECT_TRUE(m.try_lock_for(10s)) << "still held after the holder was killed (the lease is 30 s)";
  if (m.is_held()) m.unlock();
}

}  // namespace
}  // namespace dlock::test
