// How a write meets another connection's write transaction on the same file: SQLite's busy
// handler, which dlock replaces with naps sized for its tens-of-microseconds transactions.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <chrono>
#include <dlock/dlock.hpp>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>

#include "sqlite/raw_db.hpp"
#include "support/net.hpp"

namespace dlock::test {
namespace {

// A writer that finds the file in another's write transaction waits it out (the busy handler's
// naps) and goes on when it commits; one held past the request timeout fails as
// backend_unavailable at about that timeout, not at once and not never.
TEST(sqlite_busy, a_write_waits_out_anothers_transaction_up_to_the_request_timeout) {
  temp_dir dir{"dlock-sqlite-busy"};
  const std::string path = dir.path() + "/locks.db";
  dlock::session_options o{.request_timeout = std::chrono::milliseconds{400},
                           .retry = {.max_attempts = 0}};
  auto s = dlock::session::open("sqlite://" + path, o);
  raw_db other(path);
  ASSERT_EQ(other.exec("BEGIN IMMEDIATE; INSERT INTO dlock_meta VALUES ('busy', '1');"), "");
  std::jthread commit([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds{100});
    other.exec("COMMIT");
  });
  dlock::mutex m(s, "k");
  EXPECT_TRUE(m.try_lock()) << "the write did not wait for the other transaction";
  commit.join();
  m.unlock();

  ASSERT_EQ(other.exec("BEGIN IMMEDIATE; DELETE FROM dlock_meta WHERE key = 'busy';"), "");
  auto t0 = std::chrono::steady_clock::now();
  std::error_code ec;
  try {
    (void)m.try_lock();
  } catch (const std::system_error& e) {
    ec = e.code();
  }
  auto took = std::chrono::steady_clock::now() - t0;
  other.exec("ROLLBACK");
  EXPECT_EQ(ec, dlock::errc::backend_unavailable) << ec.message();
  EXPECT_GE(took, std::chrono::milliseconds{350}) << std::chrono::duration<double>(took).count();
  // Each step of the failed acquire (the enqueue, the removal of what it may have left) waits
  // its own request timeout.
  EXPECT_LT(took, std::chrono::seconds{4}) << std::chrono::duration<double>(took).count();
}

}  // namespace
}  // namespace dlock::test
