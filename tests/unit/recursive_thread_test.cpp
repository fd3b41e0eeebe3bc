// dlock::recursive_mutex re-enters only on the thread that took its hold, as std::recursive_mutex
// and Curator's InterProcessMutex do: one handle shared by two threads let both inside at once
// (a tester's). A handle moved to another thread (a hand-off) re-enters there.
#include <gtest/gtest.h>

#include <dlock/dlock.hpp>
#include <random>
#include <string>
#include <thread>

namespace dlock {
namespace {

std::string store() { return "memory://recursive-" + std::to_string(std::random_device{}()); }

TEST(recursive_mutex_threads, another_thread_cannot_re_enter_a_shared_handle) {
  auto s = session::open(store());
  recursive_mutex r(s, "r");
  r.lock();
  std::error_code ec;
  std::thread([&] { r.lock(ec); }).join();
  EXPECT_EQ(ec, errc::already_held) << ec.message();
  EXPECT_EQ(r.hold_count(), 1u) << "the refused re-entry was counted";
  r.lock();  // the holding thread still re-enters
  EXPECT_EQ(r.hold_count(), 2u);
  r.unlock();
  r.unlock();
  EXPECT_FALSE(r.is_held());
  // Free again: any thread may take it, and then only that one re-enters.
  std::thread([&] {
    r.lock();
    r.lock();
    r.unlock();
    r.unlock();
  }).join();
  EXPECT_EQ(r.hold_count(), 0u);
}

TEST(recursive_mutex_threads, a_handle_handed_over_re_enters_on_its_new_thread) {
  auto s = session::open(store());
  recursive_mutex r(s, "r");
  r.lock();
  std::error_code ec;
  std::thread([&, mine = std::move(r)]() mutable {
    mine.lock(ec);
    if (!ec) mine.unlock();
    mine.unlock();
  }).join();
  EXPECT_FALSE(ec) << ec.message();
  recursive_mutex again(s, "r");
  EXPECT_TRUE(again.try_lock()) << "the handed-over hold was not released";
}

}  // namespace
}  // namespace dlock
