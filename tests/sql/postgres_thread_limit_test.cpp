// A holder whose process reached its thread limit releases its lock anyway. The release's
// remover thread could not start; the removal, thrown out, was never queued, and the entry
// (so the lock) stayed, renewed, for as long as the session lived (a tester's unlock said only
// "the backend reported an error"). Here a forked child opens its session, takes the lock,
// then limits its address space so that no new thread's stack fits, and unlocks.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <dlock/dlock.hpp>
#include <fstream>
#include <string>
#include <thread>

#include "support/net.hpp"
#include "support/postgres_server.hpp"

namespace dlock::test {
namespace {

// The child's virtual size now, in bytes (/proc/self/statm, pages).
rlim_t address_space_now() {
  std::ifstream statm("/proc/self/statm");
  unsigned long pages = 0;
  statm >> pages;
  return static_cast<rlim_t>(pages) * static_cast<rlim_t>(::sysconf(_SC_PAGESIZE));
}

TEST(postgres_thread_limit, a_holder_that_cannot_start_a_thread_still_releases) {
  static postgres_server server;
  const auto url = server.url("ttl=30s");
  const auto lock = "threads-" + random_suffix();
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::alarm(60);
    int code = 0;
    {
      auto s = dlock::session::open(url);
      dlock::mutex m(s, lock);
      m.lock();
      rlimit lim{address_space_now() + (4u << 20), RLIM_INFINITY};  // no 8 MiB stack fits
      ::setrlimit(RLIMIT_AS, &lim);
      std::error_code ec;
      m.unlock(ec);
      if (ec) code = 2;
      lim.rlim_cur = RLIM_INFINITY;
      ::setrlimit(RLIMIT_AS, &lim);
      // The session lives on: the lock must be free now, not at its end.
      auto other = dlock::session::open(url);
      dlock::mutex probe(other, lock);
      if (code == 0 && !probe.try_lock()) code = 3;
    }
    ::_exit(code);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status)) << "the child was killed by signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0) << "2: unlock failed; 3: the lock stayed held";
}

// An open whose session cannot start its renewal threads says so, as the thread limit it is:
// it threw the bare std::system_error text "Resource temporarily unavailable" (a retester's).
TEST(postgres_thread_limit, an_open_that_cannot_start_its_threads_names_the_limit) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::alarm(60);
    int code = 0;
    // glibc keeps the stacks of exited threads (up to 40 MiB) for new ones, and this child has
    // its parent's: taken by threads that never end, they cannot serve the session's.
    for (int i = 0; i < 8; ++i) std::thread([] { ::pause(); }).detach();
    rlimit lim{address_space_now() + (4u << 20), RLIM_INFINITY};
    ::setrlimit(RLIMIT_AS, &lim);
    try {
      auto s = dlock::session::open("memory://threads-" + random_suffix());
      code = 2;
    } catch (const dlock::system_error& e) {
      const std::string what = e.what();
      if (e.code() != dlock::errc::backend_unavailable) code = 3;
      if (what.find("thread limit") == std::string::npos) code = 4;
    } catch (...) {
      code = 5;
    }
    ::_exit(code);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status)) << "the child was killed by signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0)
      << "2: opened; 3: not backend_unavailable; 4: the limit not named; 5: another exception";
}

}  // namespace
}  // namespace dlock::test
