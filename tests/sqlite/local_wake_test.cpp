// The SQLite backend's local wake-ups (src/backends/sqlite/local_wake.hpp).
#include "backends/sqlite/local_wake.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <vector>

#include "support/net.hpp"

namespace dlock::test {
namespace {

using namespace std::chrono_literals;

// A caller's deadline can pass between computing a timeout and the wait: the timeout is then
// negative, which poll(2) would take as "no timeout at all". Such a wait must return at once
// (it hung a timed try_lock_for for 17 minutes under ASan).
TEST(local_wake, a_wait_with_a_timeout_already_past_returns_at_once) {
  temp_dir dir("dlock-local-wake");
  detail::local_wake wake(dir.path() + "/locks.db");
  std::vector<detail::local_wake::listener> ls;
  ls.push_back(wake.listen("entry"));
  ASSERT_TRUE(ls.front().bound());
  auto done = std::async(std::launch::async,
                         [&] { return detail::local_wake::listener::wait_any(ls, -3ms, {}); });
  if (done.wait_for(2s) != std::future_status::ready) {
    wake.notify("entry");  // release the stuck wait, so the test ends
    FAIL() << "a wait whose timeout had already passed did not return";
  }
  EXPECT_FALSE(done.get());
}

}  // namespace
}  // namespace dlock::test
