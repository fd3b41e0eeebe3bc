// A moved-from lock object is valid but empty (as a moved-from std::unique_lock): every member
// either refuses with invalid_argument or reports nothing held. An outside tester's program
// crashed (SIGSEGV) in lock() of a moved-from dlock::mutex, also in the noexcept lock(ec), and
// a moved-from election said "has no elections" of a backend that has them.
#include <gtest/gtest.h>

#include <dlock/dlock.hpp>

namespace dlock {
namespace {

using namespace std::chrono_literals;

// The error of a refused call, as invalid_argument naming the move.
template <class F>
void expect_refused(F&& f, const char* what) {
  SCOPED_TRACE(what);
  try {
    f();
    ADD_FAILURE() << "no exception";
  } catch (const system_error& e) {
    EXPECT_EQ(e.code(), errc::invalid_argument) << e.what();
    EXPECT_NE(std::string(e.what()).find("moved from"), std::string::npos) << e.what();
  }
}

void expect_refused_ec(const std::error_code& ec, const char* what) {
  EXPECT_EQ(ec, errc::invalid_argument) << what;
}

template <class Lock>
void expect_empty_lock(Lock& a) {
  expect_refused([&] { a.lock(); }, "lock()");
  expect_refused([&] { (void)a.try_lock(); }, "try_lock()");
  expect_refused([&] { (void)a.try_lock_for(10ms); }, "try_lock_for()");
  expect_refused([&] { (void)a.try_lock_until(std::chrono::system_clock::now()); },
                 "try_lock_until(system_clock)");
  std::error_code ec;
  a.lock(ec);
  expect_refused_ec(ec, "lock(ec)");
  ec.clear();
  EXPECT_FALSE(a.try_lock(ec));
  expect_refused_ec(ec, "try_lock(ec)");
  ec.clear();
  EXPECT_FALSE(a.try_lock_until(std::chrono::steady_clock::now() + 10ms, {}, ec));
  expect_refused_ec(ec, "try_lock_until(ec)");
  EXPECT_FALSE(a.is_held());
  EXPECT_TRUE(a.name().empty());
  EXPECT_FALSE(a.session());
  EXPECT_THROW((void)a.token(), system_error);
  a.unlock();
  a.unlock(ec);
  EXPECT_EQ(ec, errc::not_held);
}

class moved_from : public ::testing::Test {
 protected:
  session s = session::open("memory://");
};

TEST_F(moved_from, a_mutex_refuses_acquires_and_holds_nothing) {
  mutex a(s, "m");
  auto b = std::move(a);
  expect_empty_lock(a);
  // The object it moved to is whole: it locks, and a moved-to assignment makes `a` usable.
  b.lock();
  EXPECT_TRUE(b.is_held());
  b.unlock();
  a = mutex(s, "m2");
  a.lock();
  EXPECT_TRUE(a.is_held());
}

TEST_F(moved_from, a_recursive_mutex_refuses_acquires) {
  recursive_mutex a(s, "r");
  auto b = std::move(a);
  expect_empty_lock(a);
  EXPECT_EQ(a.hold_count(), 0u);
}

TEST_F(moved_from, a_shared_mutex_refuses_shared_acquires_too) {
  shared_mutex a(s, "sh");
  auto b = std::move(a);
  expect_empty_lock(a);
  expect_refused([&] { a.lock_shared(); }, "lock_shared()");
  expect_refused([&] { (void)a.try_lock_shared(); }, "try_lock_shared()");
  expect_refused([&] { (void)a.try_lock_shared_for(10ms); }, "try_lock_shared_for()");
  std::error_code ec;
  a.lock_shared(ec);
  expect_refused_ec(ec, "lock_shared(ec)");
  ec.clear();
  EXPECT_FALSE(a.try_lock_shared(ec));
  expect_refused_ec(ec, "try_lock_shared(ec)");
  ec.clear();
  EXPECT_FALSE(a.try_lock_shared_until(std::chrono::steady_clock::now(), {}, ec));
  expect_refused_ec(ec, "try_lock_shared_until(ec)");
  EXPECT_FALSE(a.holds_shared());
  a.unlock_shared();
}

TEST_F(moved_from, a_semaphore_refuses_acquires) {
  semaphore a(s, "sem", 2);
  auto b = std::move(a);
  expect_refused([&] { (void)a.acquire(); }, "acquire()");
  expect_refused([&] { (void)a.try_acquire(); }, "try_acquire()");
  expect_refused([&] { (void)a.try_acquire_for(10ms); }, "try_acquire_for()");
  std::error_code ec;
  auto p = a.try_acquire_until(std::chrono::steady_clock::now(), {}, ec);
  EXPECT_FALSE(p);
  expect_refused_ec(ec, "try_acquire_until(ec)");
  auto q = b.try_acquire();
  EXPECT_TRUE(q);
}

TEST_F(moved_from, an_election_refuses_campaigns_and_observing) {
  election a(s, "e");
  auto b = std::move(a);
  expect_refused([&] { (void)a.campaign("v"); }, "campaign()");
  expect_refused([&] { (void)a.try_campaign_for("v", 10ms); }, "try_campaign_for()");
  expect_refused([&] { (void)a.leader(); }, "leader()");
  expect_refused(
      [&] { (void)a.next_change(std::nullopt, std::chrono::steady_clock::now() + 10ms); },
      "next_change()");
  std::error_code ec;
  auto l = a.campaign("v", std::chrono::steady_clock::now(), {}, ec);
  EXPECT_FALSE(l);
  expect_refused_ec(ec, "campaign(ec)");
  auto lead = b.campaign("v");
  EXPECT_TRUE(lead);
  ASSERT_TRUE(b.leader().has_value());
}

TEST_F(moved_from, a_permit_and_a_leadership_hold_nothing) {
  semaphore sem(s, "sem2", 1);
  auto p = sem.acquire();
  auto p2 = std::move(p);
  EXPECT_FALSE(p);
  EXPECT_FALSE(p.is_held());
  EXPECT_THROW((void)p.token(), system_error);
  std::error_code ec;
  p.release(ec);
  EXPECT_EQ(ec, errc::not_held);
  EXPECT_TRUE(p2.is_held());

  election e(s, "e2");
  auto l = e.campaign("v");
  auto l2 = std::move(l);
  EXPECT_FALSE(l);
  EXPECT_THROW(l.proclaim("w"), system_error);
  EXPECT_THROW((void)l.token(), system_error);
  l.resign(ec);
  EXPECT_EQ(ec, errc::not_held);
  EXPECT_TRUE(l2.is_held());
}

}  // namespace
}  // namespace dlock
