// The pages an acquire and release write to a SQLite lock file (schema version 5: the queue
// in one b-tree, sqlite_schema.cpp), counted, not timed (issue 17).
#include <gtest/gtest.h>

#include <dlock/dlock.hpp>
#include <fstream>
#include <string>

#include "sqlite/raw_db.hpp"
#include "support/net.hpp"

namespace dlock::test {
namespace {

class sqlite_pages : public ::testing::Test {
 protected:
  std::string url() const { return "sqlite://" + path_ + "?ttl=2s"; }

  temp_dir dir_{"dlock-sqlite-pages"};
  std::string path_ = dir_.path() + "/locks.db";
};

// An acquire and its release write three pages to the WAL: the lock's fencing counter and its
// queue on acquire, the queue on release (the floor, a row inserted and deleted in a table
// with a unique name, writes four). Version 4 wrote five: the queue's rows and its (name,
// token) index were two b-trees. Counted from the WAL's size, which only grows between
// checkpoints: each page written is a frame of 24 bytes and a page.
TEST_F(sqlite_pages, an_acquire_and_release_write_three_pages) {
  auto s = dlock::session::open(url());
  dlock::mutex m(s, "k");
  ASSERT_TRUE(m.try_lock());  // the lock's counter and the tables exist from here
  m.unlock();
  raw_db db(path_);
  const auto page = std::stoll(db.one("PRAGMA page_size"));
  ASSERT_EQ(db.one("PRAGMA wal_checkpoint(TRUNCATE)").substr(0, 1), "0") << "checkpoint blocked";
  const auto wal_frames = [&] {
    std::ifstream wal(path_ + "-wal", std::ios::binary | std::ios::ate);
    auto size = wal ? static_cast<long long>(wal.tellg()) : 0LL;
    return size <= 32 ? 0LL : (size - 32) / (24 + page);
  };
  ASSERT_EQ(wal_frames(), 0);
  constexpr int cycles = 20;
  for (int i = 0; i < cycles; ++i) {
    ASSERT_TRUE(m.try_lock());
    m.unlock();
  }
  // A lease renewal (a page of the sessions table) may fall into the run.
  EXPECT_LE(wal_frames(), 3 * cycles + 2)
      << "pages written per cycle: " << static_cast<double>(wal_frames()) / cycles;
  EXPECT_GE(wal_frames(), 3 * cycles);
}

}  // namespace
}  // namespace dlock::test
