// A process that holds an etcd lock and leads an election forks, and the child opens an etcd
// session of its own, as guarantees.md's "A fork" advises elsewhere. gRPC cannot cross fork():
// a tester's child hung for ever in LeaseGrant (no deadline applied), or the parent that held
// the lock aborted ("Closure already scheduled") or crashed. The child is now refused at once,
// its copies of the parent's lock and leadership refuse too, and the parent goes on unharmed.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <dlock/dlock.hpp>
#include <string>
#include <thread>

#include "etcd/etcd_env.hpp"
#include "support/net.hpp"

namespace dlock::test {
namespace {

using namespace std::chrono_literals;

TEST(etcd_fork, a_forked_child_is_refused_grpc_and_the_parent_keeps_its_hold) {
  const std::string url = "etcd://" + shared_etcd().address() + "/fk" + random_suffix() + "?ttl=3s";
  auto s = dlock::session::open(url);
  dlock::mutex held(s, "held");
  held.lock();
  dlock::election e(s, "primary");
  auto lead = e.campaign("parent");
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::alarm(20);  // a hang ends the child by SIGALRM, not the test run
    int code = 0;
    try {
      (void)dlock::session::open(url);
      code = 2;  // opened: gRPC across fork
    } catch (const dlock::system_error& err) {
      if (err.code() != dlock::errc::unsupported ||
          std::string(err.what()).find("fork") == std::string::npos)
        code = 3;
    }
    try {
      lead.proclaim("child");
      code = 4;
    } catch (const dlock::system_error& err) {
      if (err.code() != dlock::errc::invalid_argument) code = 5;
    }
    try {
      (void)e.leader();
      code = 6;
    } catch (const dlock::system_error& err) {
      if (err.code() != dlock::errc::invalid_argument) code = 7;
    }
    ::_exit(code);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status)) << "the child was killed by signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0)
      << "2/3: the child's open was not refused; 4/5: its proclaim; 6/7: its leader()";
  // The parent: its hold, its leadership and its session work on.
  std::this_thread::sleep_for(3500ms);  // past a TTL: renewals went on meanwhile
  EXPECT_TRUE(held.is_held());
  ASSERT_TRUE(lead.is_held());
  lead.proclaim("parent, still");
  auto l = e.leader();
  ASSERT_TRUE(l.has_value());
  EXPECT_EQ(l->value, "parent, still");
  held.unlock();
  lead.resign();
}

}  // namespace
}  // namespace dlock::test
