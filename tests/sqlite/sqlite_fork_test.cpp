// A process that forks while it holds a lock: the child's copies of the lock and the session
// are the parent's. A tester's child, destroying its copy of a held mutex (as a worker that
// forks in a scope and returns does), released the parent's lock: another client was granted
// it at once while the parent still believed it held, and a child that destroyed the session
// aborted. SQLite is where the child's release reached the shared file directly.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <dlock/dlock.hpp>
#include <optional>
#include <string>

#include "support/net.hpp"

namespace dlock::test {
namespace {

using namespace std::chrono_literals;

// Runs `child` in a forked child that then ends as `how` says; returns its exit status
// (128+N when killed by signal N).
template <class F>
int in_child(F child, bool exit_normally) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    int code = child();
    if (exit_normally) std::exit(code);  // static destructors and dlock's exit handler run
    ::_exit(code);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

TEST(sqlite_fork, a_forked_child_neither_releases_nor_uses_its_parents_lock) {
  temp_dir dir{"dlock-sqlite-fork"};
  const std::string url = "sqlite://" + dir.path() + "/locks.db";
  for (bool exit_normally : {false, true}) {
    SCOPED_TRACE(exit_normally ? "std::exit" : "_exit");
    auto s = dlock::session::open(url, {.ttl = 30s});
    std::optional<dlock::mutex> held;
    held.emplace(s, "forked");
    held->lock();
    const int status = in_child(
        [&] {
          // The child holds nothing: is_held() is the check it would make before writing.
          if (held->is_held() || held->current_hold().is_held()) return 4;
          std::error_code ec;
          held->unlock(ec);  // refused: not the child's to release
          if (ec != dlock::errc::invalid_argument) return 2;
          dlock::mutex other(s, "other");
          if (other.try_lock(ec) || ec != dlock::errc::invalid_argument) return 3;
          held.reset();  // its destructor: nothing sent either
          s.close();
          s = dlock::session{};  // the last reference in the child
          return 0;
        },
        exit_normally);
    EXPECT_EQ(status, 0)
        << "the child's release or acquire was not refused (2, 3), it read the parent's hold as "
           "its own (4), or it crashed";
    auto o = dlock::session::open(url);
    dlock::mutex contender(o, "forked");
    EXPECT_FALSE(contender.try_lock()) << "granted while the parent holds it";
    EXPECT_TRUE(held->is_held());
    held->unlock();
    EXPECT_TRUE(contender.try_lock());
    contender.unlock();
  }
}

}  // namespace
}  // namespace dlock::test
