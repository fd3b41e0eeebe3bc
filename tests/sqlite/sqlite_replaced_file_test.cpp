// A lock file deleted or replaced while sessions use it (rm, mv over it, a clean-up job): the
// next session to open the path makes a new file, where every lock is free and tokens start at
// 1. The sessions still on the old file must not go on as if nothing happened: a holder gets
// its loss signal at its next renewal, and a waiter on the old file is never granted there
// (beside a holder in the new one). Before the check, both went on: the old file's inode
// stays open and writable, so renewals and handoffs kept working in it.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <dlock/dlock.hpp>
#include <string>
#include <thread>
#include <vector>

#include "sqlite/raw_db.hpp"
#include "support/net.hpp"
#include "support/poll.hpp"
#include "support/process.hpp"

namespace dlock::test {
namespace {

using namespace std::chrono_literals;

class sqlite_replaced_file : public ::testing::Test {
 protected:
  // The file and its WAL and index, as `rm locks.db*` removes them.
  void delete_file() {
    for (const char* suffix : {"", "-wal", "-shm"}) std::remove((path_ + suffix).c_str());
  }
  temp_dir dir_{"dlock-sqlite-replaced"};
  std::string path_ = dir_.path() + "/locks.db";
  std::string url_ = "sqlite://" + path_ + "?ttl=1s";
};

TEST_F(sqlite_replaced_file, a_holder_whose_file_is_deleted_is_told_it_lost) {
  auto old_side = session::open(url_);
  mutex held(old_side, "k");
  held.lock();
  auto hold = held.current_hold();
  delete_file();

  auto new_side = session::open(url_);
  mutex other(new_side, "k");
  ASSERT_TRUE(other.try_lock()) << "the new file does not know the old file's holder";
  EXPECT_EQ(other.token().value, 1u) << "a new file starts its tokens again";

  // Renewals run every TTL/3; give it several.
  EXPECT_TRUE(poll_until([&] { return hold.state() == hold_state::lost; }, 5s, 10ms))
      << "the old file's holder still believes it holds: " << to_string(hold.state());
  other.unlock();
}

// Only the write-ahead log and its index deleted (a tidy-up of "stray" -wal and -shm files, an
// age-based cleaner): the main file stays, so its identity passed, and a process that opened it
// made a new log and read the database as of its last checkpoint, without the holder. An
// outside tester: a second holder with the same token, the first never told. Processes, not
// two sessions of one: SQLite shares a process's WAL index between its connections.
TEST_F(sqlite_replaced_file, a_holder_whose_write_ahead_log_is_deleted_is_told_it_lost) {
  for (const auto& which : {std::vector<std::string>{"-wal", "-shm"}, {"-wal"}}) {
    SCOPED_TRACE(which.size() == 2 ? "-wal and -shm" : "-wal");
    child_process holder({DLOCK_TEST_WORKER, "hold", url_, "k"});
    ASSERT_TRUE(holder.wait_for_line("granted ", 10s));
    for (const auto& suffix : which) std::remove((path_ + suffix).c_str());
    EXPECT_TRUE(holder.wait_for_line("lost", 5s)) << "the holder was never told";
    holder.signal(SIGKILL);
    (void)holder.wait(5s);
    delete_file();
  }
}

TEST_F(sqlite_replaced_file, a_waiter_on_a_deleted_file_is_never_granted_there) {
  auto holder_side = session::open(url_);
  auto waiter_side = session::open(url_);
  mutex held(holder_side, "k");
  held.lock();
  std::atomic<int> waited{0};  // 1: granted, 2: failed
  std::string why;
  std::jthread waiter([&] {
    mutex m(waiter_side, "k");
    try {
      waited = m.try_lock_for(10s) ? 1 : 2;
      if (waited == 1) m.unlock();
    } catch (const dlock::system_error& e) {
      why = e.what();
      waited = 2;
    }
  });
  ASSERT_TRUE(poll_until([&] { return inspect(holder_side, "k").size() == 2; }, 10s, 1ms));
  delete_file();
  auto new_side = session::open(url_);
  mutex other(new_side, "k");
  ASSERT_TRUE(other.try_lock());
  std::error_code ec;
  held.unlock(ec);  // on the old file: reported lost, and no handoff there
  ASSERT_TRUE(poll_until([&] { return waited.load() != 0; }, 15s, 10ms));
  EXPECT_EQ(waited.load(), 2) << "granted in the deleted file while the new file has a holder";
  EXPECT_NE(why.find("deleted, renamed or replaced"), std::string::npos) << why;
  other.unlock();
}

TEST_F(sqlite_replaced_file, a_file_moved_over_the_path_is_a_replacement_too) {
  auto old_side = session::open(url_);
  mutex held(old_side, "k");
  held.lock();
  auto hold = held.current_hold();
  {
    // Another lock file, made elsewhere and renamed over this path (a restore, say).
    auto elsewhere = session::open("sqlite://" + dir_.path() + "/other.db");
    mutex m(elsewhere, "k");
    m.lock();
    m.unlock();
  }
  // Its old WAL and index go too: a main file read with another file's WAL is a corrupt
  // database (SQLite's "How To Corrupt An SQLite Database File", 2.4), which no check of ours
  // can undo.
  for (const char* suffix : {"-wal", "-shm"}) std::remove((path_ + suffix).c_str());
  ASSERT_EQ(std::rename((dir_.path() + "/other.db").c_str(), path_.c_str()), 0);
  EXPECT_TRUE(poll_until([&] { return hold.state() == hold_state::lost; }, 5s, 10ms))
      << to_string(hold.state());
  // A session opened now uses the file at the path, which the old holder does not hold.
  auto now_side = session::open(url_);
  mutex m(now_side, "k");
  EXPECT_TRUE(m.try_lock());
}

// A symlink on the path re-pointed (a deploy's `current -> releases/N`, a restore): the path
// now leads to another file, while the file the old sessions opened is untouched where it
// really is. A tester's second `dlock run` was granted token 1 in the new file while the first
// held token 1 in the old one, and the first was never told.
TEST_F(sqlite_replaced_file, a_symlink_on_the_path_re_pointed_to_another_file_is_a_replacement) {
  const auto r1 = dir_.path() + "/r1", r2 = dir_.path() + "/r2", current = dir_.path() + "/current";
  ASSERT_EQ(::mkdir(r1.c_str(), 0755), 0);
  ASSERT_EQ(::mkdir(r2.c_str(), 0755), 0);
  ASSERT_EQ(::symlink("r1", current.c_str()), 0);
  const auto url = "sqlite://" + current + "/locks.db?ttl=1s";
  auto old_side = session::open(url);
  mutex held(old_side, "k");
  held.lock();
  auto hold = held.current_hold();
  const auto next = dir_.path() + "/next";
  ASSERT_EQ(::symlink("r2", next.c_str()), 0);
  ASSERT_EQ(std::rename(next.c_str(), current.c_str()), 0);  // `ln -sfn r2 current`, atomically
  auto new_side = session::open(url);
  mutex other(new_side, "k");
  ASSERT_TRUE(other.try_lock()) << "the new file does not know the old file's holder";
  EXPECT_TRUE(poll_until([&] { return hold.state() == hold_state::lost; }, 5s, 10ms))
      << "the holder in the file the path no longer leads to still believes it holds: "
      << to_string(hold.state());
  other.unlock();
}

// The same kind of fault, one entry at a time: its row deleted by another program (a DELETE by
// hand, not `unlock --force`, which ends the whole session). The next waiter is granted at once;
// the holder heard of it only at its release. Now each renewal looks up the session's own
// entries by key and ends the session when one is gone. Releases are no such news (many short
// holds under a fast renewal, which must keep the session live).
TEST_F(sqlite_replaced_file, an_entry_deleted_by_another_program_ends_its_session) {
  auto holder_side = session::open(url_);
  mutex held(holder_side, "k");
  held.lock();
  auto hold = held.current_hold();
  raw_db raw(path_);
  ASSERT_EQ(raw.exec("DELETE FROM dlock_entries WHERE name = 'k'"), "");
  auto other_side = session::open(url_);
  mutex other(other_side, "k");
  ASSERT_TRUE(other.try_lock()) << "the deleted entry still held the lock";
  EXPECT_TRUE(poll_until([&] { return hold.state() == hold_state::lost; }, 5s, 10ms))
      << "the holder whose entry was deleted still believes it holds: " << to_string(hold.state());
  other.unlock();

  auto busy = session::open(url_ + "&keepalive=5ms");
  mutex m(busy, "short");
  for (int i = 0; i < 300; ++i) {
    m.lock();
    m.unlock();
  }
  EXPECT_EQ(busy.state(), session_state::live);
}

}  // namespace
}  // namespace dlock::test
