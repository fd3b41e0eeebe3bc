// An observer (observe_only: `dlock status`, `leader`, `observe`) of a SQLite file that its
// first writer has not finished creating: it writes nothing, sees nothing held, and then sees
// what the writer does.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <chrono>
#include <dlock/dlock.hpp>
#include <fstream>
#include <optional>
#include <string>
#include <thread>

#include "sqlite/raw_db.hpp"
#include "support/net.hpp"

namespace dlock::test {
namespace {

class sqlite_observer : public ::testing::Test {
 protected:
  std::string url() const { return "sqlite://" + path_ + "?ttl=2s"; }

  temp_dir dir_{"dlock-sqlite-observer"};
  std::string path_ = dir_.path() + "/locks.db";
};

// An observer that opens a file before its first writer has created dlock's tables (an empty
// file, or one being created) sees nothing held, as for a file that does not exist; it
// creates nothing, and sees the first leader once there is one.
TEST_F(sqlite_observer, an_observer_of_a_file_without_tables_yet_sees_nothing_held) {
  { std::ofstream touch(path_); }
  auto look = dlock::session::open(url(), {.observe_only = true});
  EXPECT_TRUE(dlock::inspect(look, "k").empty());
  EXPECT_TRUE(dlock::list_locks(look, "").empty());
  dlock::election watch(look, "primary");
  EXPECT_FALSE(watch.leader());
  EXPECT_EQ(raw_db(path_).one("SELECT count(*) FROM sqlite_master"), "0") << "an observer wrote";
  auto s = dlock::session::open(url());
  auto lead = dlock::election(s, "primary").try_campaign_for("first", std::chrono::seconds{5});
  ASSERT_TRUE(lead);
  auto seen =
      watch.next_change(std::nullopt, std::chrono::steady_clock::now() + std::chrono::seconds{10});
  ASSERT_TRUE(seen);
  EXPECT_EQ(seen->value, "first");
}

// An observer that opens while the file's first writer holds it locked (creating it, before
// WAL) waits for the lock, as any read does, and then sees the first leader. It once fell back
// to an immutable handle, a snapshot that never changes, and watched an empty file forever
// (the CLI's `observe` test failed so under ASan: the writer was slow to create the file).
TEST_F(sqlite_observer, an_observer_opened_while_the_file_is_being_created_sees_later_changes) {
  sqlite3* creator = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &creator), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(creator, "BEGIN EXCLUSIVE; CREATE TABLE placeholder(a);", nullptr, nullptr,
                         nullptr),
            SQLITE_OK);
  std::jthread creating([creator] {
    std::this_thread::sleep_for(std::chrono::milliseconds{300});
    sqlite3_exec(creator, "ROLLBACK", nullptr, nullptr, nullptr);
    sqlite3_close(creator);
  });
  auto look = dlock::session::open(url(), {.observe_only = true});
  creating.join();
  dlock::election watch(look, "primary");
  EXPECT_FALSE(watch.leader());
  auto s = dlock::session::open(url());
  auto lead = dlock::election(s, "primary").try_campaign_for("first", std::chrono::seconds{5});
  ASSERT_TRUE(lead);
  auto seen =
      watch.next_change(std::nullopt, std::chrono::steady_clock::now() + std::chrono::seconds{5});
  ASSERT_TRUE(seen) << "the observer never saw the leader (a snapshot that never changes)";
  EXPECT_EQ(seen->value, "first");
}

}  // namespace
}  // namespace dlock::test
