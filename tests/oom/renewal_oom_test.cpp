// Memory that runs out while a lock is held: every allocation of dlock's threads fails (this
// binary's operator new throws std::bad_alloc off the test's own thread while `starved`). A
// tester's process was ended by std::terminate at its next renewal, on every backend, a
// bad_alloc escaping the renewal thread. A renewal that cannot allocate is a failed renewal:
// the hold is lost at the lease's end, and the host lives on.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <dlock/dlock.hpp>
#include <new>
#include <string>
#include <thread>

#include "support/net.hpp"
#include "support/poll.hpp"

namespace {
std::atomic<bool> starved{false};
thread_local bool exempt = false;
}  // namespace

// GCC pairs these by name only: malloc'd by the operator new below, so free is the match.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"

void* operator new(std::size_t n) {
  if (starved.load(std::memory_order_relaxed) && !exempt) throw std::bad_alloc();
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }

namespace dlock::test {
namespace {

using namespace std::chrono_literals;

TEST(renewal_oom, a_renewal_that_cannot_allocate_fails_and_the_host_lives_on) {
  exempt = true;
  temp_dir dir{"dlock-oom"};
  auto s = dlock::session::open("sqlite://" + dir.path() + "/locks.db?ttl=600ms");
  dlock::mutex m(s, "oom");
  m.lock();
  auto h = m.current_hold();
  starved = true;
  std::this_thread::sleep_for(1500ms);  // renewals every 200 ms, and the lease's end
  starved = false;
  EXPECT_FALSE(h.is_held());
  // What could not be told while memory was short is told once it is back: the loss signal
  // fires and the state says lost (a tester's hold stayed `held`, its lost_token() silent).
  EXPECT_TRUE(poll_until([&] { return h.lost_token().stop_requested(); }, 5s));
  EXPECT_EQ(h.state(), dlock::hold_state::lost);
  EXPECT_EQ(s.state(), dlock::session_state::expired);
  std::error_code ec;
  m.unlock(ec);
  // The process is still here; a new session works.
  auto t = dlock::session::open("sqlite://" + dir.path() + "/locks.db");
  dlock::mutex again(t, "oom");
  EXPECT_TRUE(again.try_lock_for(5s));
}

}  // namespace
}  // namespace dlock::test
