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

// session::open keeps to its budget (open_timeout) while another connection holds the file's
// write lock: every busy wait of the open shares it. Each used to wait the whole request
// timeout, so `dlock run -w 500ms` (and `-n`) gave up only after 5 s. Two files: one dlock
// made (WAL: writing the session row waits for the write lock; 5 s before the fix), and a new
// one another program holds in a rollback-journal transaction (there the switch to WAL fails
// at once, without a busy wait, and the open retries until its budget is spent).
TEST(sqlite_busy, an_open_of_a_write_locked_file_keeps_to_the_open_timeout) {
  temp_dir dir{"dlock-sqlite-busy"};
  const std::string made = dir.path() + "/made.db";
  dlock::session::open("sqlite://" + made).close();
  const std::string fresh = dir.path() + "/fresh.db";
  for (const auto& path : {made, fresh}) {
    SCOPED_TRACE(path);
    raw_db other(path);
    ASSERT_EQ(other.exec("BEGIN IMMEDIATE"), "");
    auto t0 = std::chrono::steady_clock::now();
    std::error_code ec;
    std::string what;
    try {
      (void)dlock::session::open("sqlite://" + path,
                                 {.open_timeout = std::chrono::milliseconds{500}});
    } catch (const std::system_error& e) {
      ec = e.code();
      what = e.what();
    }
    auto took = std::chrono::steady_clock::now() - t0;
    other.exec("ROLLBACK");
    EXPECT_EQ(ec, dlock::errc::backend_unavailable) << what;
    // Generous slack for a loaded machine; without the bound it takes the 5 s request timeout.
    EXPECT_LT(took, std::chrono::seconds{3}) << what;
    EXPECT_NE(what.find("attempt"), std::string::npos) << what;
  }

  // The bound is the open's alone: later on, the same session waits out a write transaction
  // for up to its request timeout, its past open deadline forgotten.
  auto s = dlock::session::open("sqlite://" + made, {.open_timeout = std::chrono::milliseconds{500},
                                                     .retry = {.max_attempts = 0}});
  raw_db other(made);
  ASSERT_EQ(other.exec("BEGIN IMMEDIATE"), "");
  std::jthread commit([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds{800});
    other.exec("COMMIT");
  });
  dlock::mutex m(s, "k");
  EXPECT_TRUE(m.try_lock()) << "the write did not wait for the other transaction";
  commit.join();
  m.unlock();
}

}  // namespace
}  // namespace dlock::test
