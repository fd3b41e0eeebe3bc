// The SQLite schema's upgrades in place (version 1, wall-clock leases -> version 2, leases on
// CLOCK_BOOTTIME with the boot id -> version 3, entries with values -> version 4, the same
// rows in fewer b-trees -> version 5, the queue in one b-tree), and what the boot id means (a
// lease of another boot is over).
#include <gtest/gtest.h>
#include <time.h>

#include <chrono>
#include <dlock/dlock.hpp>
#include <fstream>
#include <stdexcept>
#include <string>

#include "sqlite/raw_db.hpp"
#include "support/net.hpp"

namespace dlock::test {
namespace {

// dlock's version-1 schema, verbatim (the DDL of every file created before version 2).
constexpr const char* schema_v1 = R"sql(
CREATE TABLE IF NOT EXISTS dlock_meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
INSERT OR IGNORE INTO dlock_meta(key, value) VALUES ('schema_version', '1');
CREATE TABLE IF NOT EXISTS dlock_sessions(
  id TEXT PRIMARY KEY, owner TEXT NOT NULL, host TEXT NOT NULL, pid INTEGER NOT NULL,
  pid_start INTEGER NOT NULL, expires_ms INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS dlock_fences(name TEXT PRIMARY KEY, fence INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS dlock_entries(
  seq INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT NOT NULL, id TEXT NOT NULL UNIQUE,
  kind INTEGER NOT NULL, token INTEGER NOT NULL, session TEXT NOT NULL,
  created_ms INTEGER NOT NULL, UNIQUE(name, token));
CREATE INDEX IF NOT EXISTS dlock_entries_session ON dlock_entries(session);
)sql";

// dlock's version-2 schema, verbatim (every file created by dlock before elections).
constexpr const char* schema_v2 = R"sql(
CREATE TABLE IF NOT EXISTS dlock_meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS dlock_sessions(
  id TEXT PRIMARY KEY, owner TEXT NOT NULL, host TEXT NOT NULL, pid INTEGER NOT NULL,
  pid_start INTEGER NOT NULL, boot_id TEXT NOT NULL, expires_boot_ms INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS dlock_fences(name TEXT PRIMARY KEY, fence INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS dlock_entries(
  seq INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT NOT NULL, id TEXT NOT NULL UNIQUE,
  kind INTEGER NOT NULL, token INTEGER NOT NULL, session TEXT NOT NULL,
  created_ms INTEGER NOT NULL, UNIQUE(name, token));
CREATE INDEX IF NOT EXISTS dlock_entries_session ON dlock_entries(session);
INSERT INTO dlock_meta(key, value) VALUES ('schema_version', '2');
)sql";

// dlock's version-3 schema, verbatim (every file created by dlock before 2026-12-04).
constexpr const char* schema_v3 = R"sql(
CREATE TABLE IF NOT EXISTS dlock_meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS dlock_sessions(
  id TEXT PRIMARY KEY, owner TEXT NOT NULL, host TEXT NOT NULL, pid INTEGER NOT NULL,
  pid_start INTEGER NOT NULL, boot_id TEXT NOT NULL, expires_boot_ms INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS dlock_fences(name TEXT PRIMARY KEY, fence INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS dlock_entries(
  seq INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT NOT NULL, id TEXT NOT NULL UNIQUE,
  kind INTEGER NOT NULL, token INTEGER NOT NULL, session TEXT NOT NULL,
  created_ms INTEGER NOT NULL, value BLOB NOT NULL DEFAULT x'',
  version INTEGER NOT NULL DEFAULT 0, UNIQUE(name, token));
CREATE INDEX IF NOT EXISTS dlock_entries_session ON dlock_entries(session);
INSERT INTO dlock_meta(key, value) VALUES ('schema_version', '3');
)sql";

// dlock's version-4 schema, verbatim (every file created by dlock before 2026-12-05).
constexpr const char* schema_v4 = R"sql(
CREATE TABLE IF NOT EXISTS dlock_meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS dlock_sessions(
  id TEXT PRIMARY KEY, owner TEXT NOT NULL, host TEXT NOT NULL, pid INTEGER NOT NULL,
  pid_start INTEGER NOT NULL, boot_id TEXT NOT NULL, expires_boot_ms INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS dlock_fences(name TEXT PRIMARY KEY, fence INTEGER NOT NULL)
  WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS dlock_entries(
  name TEXT NOT NULL, id TEXT NOT NULL, kind INTEGER NOT NULL, token INTEGER NOT NULL,
  session TEXT NOT NULL, created_ms INTEGER NOT NULL, value BLOB NOT NULL DEFAULT x'',
  version INTEGER NOT NULL DEFAULT 0, PRIMARY KEY(session, id), UNIQUE(name, token))
  WITHOUT ROWID;
INSERT INTO dlock_meta(key, value) VALUES ('schema_version', '4');
)sql";

std::int64_t wall_ms() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

std::int64_t boot_ms() {
  timespec ts{};
  ::clock_gettime(CLOCK_BOOTTIME, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1'000'000;
}

std::string boot_id() {
  std::ifstream f("/proc/sys/kernel/random/boot_id");
  std::string id;
  std::getline(f, id);
  return id;
}

// What a version-3 or -4 client stores, as it writes it: a session with a minute's lease on
// this boot, and an entry of lock `name` (they name their columns alike).
std::string live_session(const std::string& id) {
  return "INSERT INTO dlock_sessions VALUES ('" + id + "', 'old', 'h', 0, 0, '" + boot_id() +
         "', " + std::to_string(boot_ms() + 60'000) + ");";
}
std::string old_entry(const std::string& name, const std::string& id, int token,
                      const std::string& session) {
  return "INSERT OR FAIL INTO dlock_entries(name, id, kind, token, session, created_ms) "
         "VALUES ('" +
         name + "', '" + id + "', 0, " + std::to_string(token) + ", '" + session + "', " +
         std::to_string(wall_ms()) + ");";
}
// A hold of 'held' (token 40) with a waiter behind it (41), and a leader of 'primary' whose
// value 'old' was set three times; counters 41 and 9.
std::string old_holds() {
  return live_session("live") + live_session("behind") +
         "INSERT INTO dlock_fences VALUES ('held', 41), ('primary', 9);" +
         old_entry("held", "live-1", 40, "live") + old_entry("held", "behind-1", 41, "behind") +
         old_entry("primary", "live-2~e", 9, "live") +
         "UPDATE dlock_entries SET value = x'6f6c64', version = 3 WHERE id = 'live-2~e';";
}
// old_holds() as today's code reads it.
void expect_old_holds(dlock::session& s) {
  auto q = dlock::inspect(s, "held");
  ASSERT_EQ(q.size(), 2u);
  EXPECT_TRUE(q[0].holds);
  EXPECT_EQ(q[0].token, 40u);
  EXPECT_FALSE(q[1].holds);
  auto leader = dlock::election(s, "primary").leader();
  ASSERT_TRUE(leader);
  EXPECT_EQ(leader->value, "old");
  EXPECT_EQ(leader->version, 3u);
}

class sqlite_schema : public ::testing::Test {
 protected:
  std::string url() const { return "sqlite://" + path_ + "?ttl=2s"; }

  temp_dir dir_{"dlock-sqlite-schema"};
  std::string path_ = dir_.path() + "/locks.db";
};

// A version-1 file with a live hold (lease 60 s ahead on the wall clock), a lapsed one, and
// fencing counters, opened by today's code: upgraded in place, the live hold kept with its
// remaining lease, the lapsed one gone, the counters kept, and a version-1 client locked out
// (it can no longer write a lease on the wall clock).
TEST_F(sqlite_schema, a_version_1_file_is_upgraded_in_place_keeping_live_holds_and_tokens) {
  {
    raw_db old(path_);
    ASSERT_EQ(old.exec(schema_v1), "");
    auto now = std::to_string(wall_ms());
    // pid 0: the process cannot be checked, so only the lease decides (as for another host).
    ASSERT_EQ(old.exec("INSERT INTO dlock_sessions VALUES ('live', 'old holder', 'h', 0, 0, " +
                       now + " + 60000), ('lapsed', 'old waiter', 'h', 0, 0, " + now +
                       " - 1000);"
                       "INSERT INTO dlock_fences VALUES ('held', 7), ('free', 3);"
                       "INSERT INTO dlock_entries(name, id, kind, token, session, created_ms) "
                       "VALUES ('held', 'e1', 0, 7, 'live', " +
                       now + "), ('free', 'e2', 0, 3, 'lapsed', " + now + ");"),
              "");
  }
  auto s = dlock::session::open(url());
  dlock::mutex held(s, "held");
  EXPECT_FALSE(held.try_lock()) << "the live version-1 hold was lost in the upgrade";
  dlock::mutex freed(s, "free");
  ASSERT_TRUE(freed.try_lock()) << "the lapsed version-1 hold still blocks";
  EXPECT_GT(freed.token().value, 3u);
  freed.unlock();

  raw_db db(path_);
  EXPECT_EQ(db.one("SELECT value FROM dlock_meta WHERE key = 'schema_version'"), "5");
  EXPECT_EQ(db.one("SELECT boot_id FROM dlock_sessions WHERE id = 'live'"), boot_id());
  auto left_ms =
      std::stoll(db.one("SELECT expires_boot_ms FROM dlock_sessions WHERE id = 'live'")) -
      boot_ms();
  EXPECT_GT(left_ms, 50'000);
  EXPECT_LE(left_ms, 60'000);
  EXPECT_EQ(db.one("SELECT count(*) FROM dlock_sessions WHERE id = 'lapsed'"), "0");
  // What a version-1 client writes at open and at every renewal now fails instead of mixing
  // wall-clock leases into the table.
  EXPECT_NE(db.exec("UPDATE dlock_sessions SET expires_ms = 0 WHERE id = 'live'"), "");

  // Opening the upgraded file again changes nothing.
  auto again = dlock::session::open(url());
  dlock::mutex held2(again, "held");
  EXPECT_FALSE(held2.try_lock());
}

// A version-2 file with a live hold, opened by today's code: upgraded in place (entries gain a
// value and its version), the hold and the counters kept; a version-2 process already using
// the file goes on writing its entries (it names its columns, the new ones have defaults);
// elections then work on the file.
TEST_F(sqlite_schema, a_version_2_file_is_upgraded_in_place_and_version_2_writers_go_on) {
  const auto v2_entry = [&](const std::string& name, const std::string& id, int token) {
    return "INSERT INTO dlock_entries(name, id, kind, token, session, created_ms) VALUES ('" +
           name + "', '" + id + "', 0, " + std::to_string(token) + ", 'live', " +
           std::to_string(wall_ms()) + ");";
  };
  {
    raw_db old(path_);
    ASSERT_EQ(old.exec(schema_v2), "");
    ASSERT_EQ(old.exec("INSERT INTO dlock_sessions VALUES ('live', 'old holder', 'h', 0, 0, '" +
                       boot_id() + "', " + std::to_string(boot_ms() + 60'000) +
                       ");"
                       "INSERT INTO dlock_fences VALUES ('held', 7);" +
                       v2_entry("held", "e1", 7)),
              "");
  }
  auto s = dlock::session::open(url());
  dlock::mutex held(s, "held");
  EXPECT_FALSE(held.try_lock()) << "the live version-2 hold was lost in the upgrade";
  raw_db db(path_);
  EXPECT_EQ(db.one("SELECT value FROM dlock_meta WHERE key = 'schema_version'"), "5");
  EXPECT_EQ(db.one("SELECT version FROM dlock_entries WHERE id = 'e1'"), "0");
  // The version-2 process's insert, as its enqueue writes it.
  ASSERT_EQ(db.exec("INSERT INTO dlock_fences VALUES ('other', 1);" + v2_entry("other", "e2", 1)),
            "");
  auto q = dlock::inspect(s, "other");
  ASSERT_EQ(q.size(), 1u);
  EXPECT_TRUE(q[0].holds);

  dlock::election e(s, "primary");
  auto lead = e.try_campaign_for("here", std::chrono::seconds{5});
  ASSERT_TRUE(lead);
  auto l = e.leader();
  ASSERT_TRUE(l);
  EXPECT_EQ(l->value, "here");
  EXPECT_EQ(l->version, 1u);
}

// A version-3 file with a live hold, a waiter behind it and a leader's value, opened by
// today's code: rebuilt in place (entries keyed by session and id, no rowid), every row and
// fencing counter kept, the hold still holding and the next token above the old counter; a
// version-3 process already using the file goes on with the statements it sends (they name
// their columns and look entries up by id); a second open changes nothing.
TEST_F(sqlite_schema, a_version_3_file_is_upgraded_in_place_keeping_rows_and_tokens) {
  {
    raw_db old(path_);
    ASSERT_EQ(old.exec(schema_v3), "");
    ASSERT_EQ(old.exec(old_holds()), "");
  }
  auto s = dlock::session::open(url());
  raw_db db(path_);
  EXPECT_EQ(db.one("SELECT value FROM dlock_meta WHERE key = 'schema_version'"), "5");
  EXPECT_EQ(db.one("SELECT count(*) FROM dlock_entries"), "3");
  EXPECT_EQ(db.one("SELECT group_concat(name || '=' || fence) FROM "
                   "(SELECT * FROM dlock_fences ORDER BY name)"),
            "held=41,primary=9");
  EXPECT_EQ(db.one("SELECT count(*) FROM sqlite_master WHERE name LIKE '%_v4' OR name LIKE "
                   "'%_v5'"),
            "0");
  ASSERT_NO_FATAL_FAILURE(expect_old_holds(s));

  // The version-3 process's own statements, as it sends them.
  EXPECT_EQ(db.one("SELECT 1 FROM dlock_entries WHERE id = 'behind-1'"), "1");
  ASSERT_EQ(db.exec("DELETE FROM dlock_entries WHERE name = 'held' AND id = 'live-1' AND "
                    "session = 'live'"),
            "");
  auto q = dlock::inspect(s, "held");
  ASSERT_EQ(q.size(), 1u);
  EXPECT_TRUE(q[0].holds) << "the waiter behind the released hold does not hold";

  // Counters go on from where they were, whoever bumps them.
  dlock::mutex other(s, "other");
  ASSERT_TRUE(other.try_lock());
  other.unlock();
  ASSERT_EQ(db.exec("DELETE FROM dlock_entries WHERE session = 'behind'"), "");
  dlock::mutex held(s, "held");
  ASSERT_TRUE(held.try_lock());
  EXPECT_EQ(held.token().value, 42u);
  held.unlock();

  auto again = dlock::session::open(url());
  EXPECT_EQ(raw_db(path_).one("SELECT value FROM dlock_meta WHERE key = 'schema_version'"), "5");
}

// A version-4 file with a live hold, a waiter behind it and a leader's value, opened by
// today's code: rebuilt in place (one b-tree keyed by name and token, no index), every row and
// counter kept; a version-4 process already using the file goes on with the statements it
// sends (by session and id: they now scan); a second open changes nothing.
TEST_F(sqlite_schema, a_version_4_file_is_upgraded_in_place_keeping_rows_and_tokens) {
  {
    raw_db old(path_);
    ASSERT_EQ(old.exec(schema_v4), "");
    ASSERT_EQ(old.exec(old_holds()), "");
  }
  auto s = dlock::session::open(url());
  raw_db db(path_);
  EXPECT_EQ(db.one("SELECT value FROM dlock_meta WHERE key = 'schema_version'"), "5");
  EXPECT_EQ(db.one("SELECT count(*) FROM dlock_entries"), "3");
  EXPECT_EQ(db.one("SELECT count(*) FROM sqlite_master WHERE tbl_name = 'dlock_entries' AND "
                   "type = 'index'"),
            "0")
      << "the queue still has a second b-tree";
  EXPECT_EQ(db.one("SELECT count(*) FROM sqlite_master WHERE name LIKE '%_v5'"), "0");
  EXPECT_EQ(db.one("SELECT group_concat(name || '=' || fence) FROM "
                   "(SELECT * FROM dlock_fences ORDER BY name)"),
            "held=41,primary=9");
  ASSERT_NO_FATAL_FAILURE(expect_old_holds(s));

  // The version-4 process's own statements, as it sends them.
  EXPECT_EQ(db.one("SELECT 1 FROM dlock_entries WHERE session = 'behind' AND id = 'behind-1'"),
            "1");
  ASSERT_EQ(db.exec("DELETE FROM dlock_entries WHERE session = 'live' AND id = 'live-1' AND "
                    "name = 'held'"),
            "");
  auto q = dlock::inspect(s, "held");
  ASSERT_EQ(q.size(), 1u);
  EXPECT_TRUE(q[0].holds) << "the waiter behind the released hold does not hold";
  // A second entry with a token already stored is refused, as version 4's index refused it.
  EXPECT_NE(db.exec(old_entry("held", "dup-1", 41, "live")), "");

  ASSERT_EQ(db.exec("DELETE FROM dlock_entries WHERE session = 'behind'"), "");
  dlock::mutex held(s, "held");
  ASSERT_TRUE(held.try_lock());
  EXPECT_EQ(held.token().value, 42u);
  held.unlock();

  auto again = dlock::session::open(url());
  EXPECT_EQ(raw_db(path_).one("SELECT value FROM dlock_meta WHERE key = 'schema_version'"), "5");
}

// A lease written during another boot is over, however far its end lies on this boot's clock.
TEST_F(sqlite_schema, a_lease_of_another_boot_is_over) {
  {
    auto s = dlock::session::open(url());  // creates the file
  }
  {
    raw_db db(path_);
    ASSERT_EQ(db.exec("INSERT INTO dlock_sessions(id, owner, host, pid, pid_start, boot_id, "
                      "expires_boot_ms) VALUES ('before', 'x', 'h', 0, 0, 'another-boot', " +
                      std::to_string(boot_ms() + 3'600'000) +
                      ");"
                      "INSERT INTO dlock_fences VALUES ('k', 1);"
                      "INSERT INTO dlock_entries(name, id, kind, token, session, created_ms) "
                      "VALUES ('k', 'e1', 0, 1, 'before', 0);"),
              "");
  }
  auto s = dlock::session::open(url());
  dlock::mutex m(s, "k");
  EXPECT_TRUE(m.try_lock()) << "a lease of another boot still holds";
}

// A file from a newer dlock is refused, not rewritten.
TEST_F(sqlite_schema, a_newer_schema_is_refused) {
  { auto s = dlock::session::open(url()); }
  {
    raw_db db(path_);
    ASSERT_EQ(db.exec("UPDATE dlock_meta SET value = '6' WHERE key = 'schema_version'"), "");
  }
  std::error_code ec;
  auto s = dlock::session::open(url(), {}, ec);
  EXPECT_FALSE(s);
  EXPECT_EQ(ec, dlock::errc::unsupported) << ec.message();
}

// Another application's database is refused, for writing and for looking, and left as it
// was: no dlock table, its journal mode kept. The new-user trial pointed --url at an app's
// file, and dlock added its tables and switched the file to WAL for good.
TEST_F(sqlite_schema, another_applications_database_is_refused_and_left_as_it_was) {
  {
    raw_db db(path_);
    ASSERT_EQ(db.exec("CREATE TABLE orders(id INTEGER PRIMARY KEY); CREATE TABLE users(id);"), "");
  }
  for (bool observe_only : {false, true}) {
    std::error_code ec;
    auto s = dlock::session::open(url(), {.observe_only = observe_only}, ec);
    EXPECT_FALSE(s);
    EXPECT_EQ(ec, dlock::errc::unsupported) << ec.message();
    auto why = dlock::last_error_message();
    EXPECT_NE(why.find("another application's database (tables: orders, users)"), std::string::npos)
        << why;
  }
  raw_db db(path_);
  EXPECT_EQ(db.one("SELECT count(*) FROM sqlite_master WHERE name LIKE 'dlock%'"), "0");
  EXPECT_EQ(db.one("PRAGMA journal_mode"), "delete");
}

// A file that holds dlock's tables and the application's is dlock's too: whoever shares it on
// purpose (created by dlock first, the application's tables added later) keeps working.
TEST_F(sqlite_schema, a_file_with_dlocks_tables_may_hold_others_too) {
  { auto s = dlock::session::open(url()); }
  {
    raw_db db(path_);
    ASSERT_EQ(db.exec("CREATE TABLE orders(id INTEGER PRIMARY KEY)"), "");
  }
  auto s = dlock::session::open(url());
  dlock::mutex m(s, "k");
  EXPECT_TRUE(m.try_lock());
}

}  // namespace
}  // namespace dlock::test
