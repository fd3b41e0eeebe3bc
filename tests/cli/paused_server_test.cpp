// A server paused (SIGSTOP) while `dlock run -w D` waits in its queue: dlock gives up at D and
// exits soon after (docs/cli.md: about D + 2.5 s; ZooKeeper D + 3 s). On ZooKeeper it exited
// after about 12 s whatever D (a tester's): its close waited for a synchronous request sent
// before the pause (the waiter's removal, a renewal), which the client gives up only at 2/3 of
// the session timeout.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>
#include <vector>

#include "backends_fixture.hpp"
#include "cli_harness.hpp"

namespace dlock::test {
namespace {

using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

// SIGSTOP now, SIGCONT when destroyed (every process of the server).
struct paused {
  explicit paused(std::vector<pid_t> p) : pids(std::move(p)) {
    for (pid_t pid : pids) ::kill(pid, SIGSTOP);
  }
  ~paused() {
    for (pid_t pid : pids) ::kill(pid, SIGCONT);
  }
  std::vector<pid_t> pids;
};

}  // namespace

TEST_F(CliBackends, AWaiterOnAPausedServerExitsSoonAfterItsDeadline) {
  cli_sandbox box;
  const std::vector<std::pair<std::string, std::vector<pid_t>>> cases = {
      {"zk://" + srv_->zk->hosts() + "/paused", {srv_->zk->pid()}},
      {"redis://" + srv_->redis->address(), {srv_->redis->pid()}},
      {"etcd://" + srv_->etcd->address(), {srv_->etcd->pid()}},
      {srv_->pg->url(), srv_->pg->processes()},
      {srv_->maria->url(), {srv_->maria->pid()}},
  };
  for (const auto& [url, pids] : cases) {
    SCOPED_TRACE(url);
    const auto name = "paused-" + random_suffix();
    auto holder = box.start({"run", "--url", url, name, "--", "sh", "-c", "echo held; sleep 60"});
    ASSERT_TRUE(holder.wait_for_line("held", 30s)) << "the holder was not granted";
    auto waiter = box.start({"run", "-w", "1s", "--url", url, name, "--", "echo", "CMD-RAN"});
    // Paused once the waiter is queued: an enqueue cut off is another test's case.
    ASSERT_TRUE(poll(
        [&] {
          auto s = box.run({"status", "--json", "--url", url, name});
          auto j = nlohmann::json::parse(s.output, nullptr, false);
          return !j.is_discarded() && j.contains("waiters") && j["waiters"].size() == 1;
        },
        20s))
        << "the waiter never showed in the queue";
    const auto started = steady::now();
    std::optional<int> status;
    {
      paused stop(pids);
      status = waiter.wait(30s);
    }
    const auto took = steady::now() - started;
    ASSERT_TRUE(status) << "the waiter did not exit within 30 s";
    EXPECT_EQ(*status, 75);
    // At most 1 s of the wait was left at the pause; the docs' D + 3 s, and 2 s of slack for a
    // loaded machine.
    EXPECT_LT(took, 6s) << "the waiter exited "
                        << std::chrono::duration_cast<std::chrono::milliseconds>(took).count()
                        << " ms after the server was paused";
    holder.signal(SIGTERM);
    (void)holder.wait(30s);
  }
}

// `dlock observe` stopped by SIGINT while its server is paused ends cleanly (exit 0): a read in
// flight then fails at its request timeout, and that failure made it exit 69 (a tester's); and
// it ends at once, not when that read's request timeout (5 s) ends it.
TEST_F(CliBackends, AnObserverStoppedWhileItsServerIsPausedExitsZero) {
  cli_sandbox box;
  const std::vector<std::pair<std::string, std::vector<pid_t>>> cases = {
      {"redis://" + srv_->redis->address(), {srv_->redis->pid()}},
      {"zk://" + srv_->zk->hosts() + "/paused", {srv_->zk->pid()}},
  };
  for (const auto& [url, pids] : cases) {
    SCOPED_TRACE(url);
    auto watcher = box.start({"observe", "--url", url, "paused-" + random_suffix()});
    ASSERT_TRUE(watcher.read_line(30s)) << "no first line";
    std::optional<int> status;
    {
      paused stop(pids);
      std::this_thread::sleep_for(1s);
      watcher.signal(SIGINT);
      const auto signalled = std::chrono::steady_clock::now();
      status = watcher.wait(15s);
      EXPECT_LT(std::chrono::steady_clock::now() - signalled, 3s)
          << "observe waited for its read in flight";
    }
    ASSERT_TRUE(status) << "observe did not end within 15 s of SIGINT";
    std::string said;
    while (auto line = watcher.read_line(1s)) said += *line + "\n";
    EXPECT_EQ(*status, 0) << said;
  }
}

}  // namespace dlock::test
