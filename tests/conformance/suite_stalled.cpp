// A backend that stops answering (a paused server, a black-holed route, another process's
// write lock on a SQLite file) without closing its connections: a waiter still keeps its
// deadline. A tester's `dlock run -w 4s` returned after about 15 s on every backend: the
// listing after its wake-up waited for the request timeout, then the CLI's look at the holder
// did again.
#include <atomic>
#include <dlock/dlock.hpp>
#include <thread>

#include "conformance/suite.hpp"

namespace dlock::test {
namespace {

// The fixture's URL with a 20 s lease instead of its 2 s one: the waiter's deadline, not its
// lease's end, must be what ends the wait.
std::string with_long_lease(std::string url) {
  if (auto at = url.find("=2s"); at != std::string::npos) url.replace(at, 3, "=20s");
  return url;
}

// Tells when the session's enqueue has been answered: the stall must come while the waiter
// waits, not while its enqueue is in flight (an acquire that cannot reach the server fails
// with the backend's error; that is not what is tested here).
class enqueue_seen : public dlock::observer {
 public:
  void on_request(const dlock::request_event& e) override {
    if (e.operation == "enqueue" && !e.error) seen = true;
  }
  std::atomic<bool> seen{false};
};

}  // namespace

TEST_P(conformance, a_waiter_keeps_its_deadline_while_the_backend_does_not_answer) {
  const auto url = with_long_lease(fx().url());
  ASSERT_NE(url, fx().url()) << "no 2 s lease to lengthen in " << fx().url();
  auto a = dlock::session::open(url);
  auto enqueued = std::make_shared<enqueue_seen>();
  dlock::session_options opts;
  opts.observer = enqueued;
  auto b = dlock::session::open(url, opts);
  dlock::mutex holder(a, lock_name());
  holder.lock();
  dlock::mutex waiter(b, lock_name());
  constexpr auto wait = 1500ms;
  std::atomic<bool> got{true};
  std::atomic<std::chrono::steady_clock::duration> took{};
  std::jthread t([&] {
    const auto start = std::chrono::steady_clock::now();
    got = waiter.try_lock_for(wait);
    took = std::chrono::steady_clock::now() - start;
  });
  ASSERT_TRUE(poll_until([&] { return enqueued->seen.load(); }, 10s));
  auto stalled = fx().stall();
  if (!stalled) {
    holder.unlock();
    t.join();
    GTEST_SKIP() << "the fixture cannot stall this backend";
  }
  t.join();
  stalled.reset();
  EXPECT_FALSE(got);
  // The deadline, then at most release_timeout (1 s) for the removal of its entry (which the
  // stall keeps waiting too), and two seconds of slack for a loaded machine: never a request
  // timeout (5 s) more. Without the bound: 6.5 s (SQLite) to 14 s (ZooKeeper).
  EXPECT_LT(took.load(), wait + 3s)
      << "the wait took "
      << std::chrono::duration_cast<std::chrono::milliseconds>(took.load()).count() << " ms";
}

}  // namespace dlock::test
