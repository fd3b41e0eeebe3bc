// The conformance suite on mysql://...?mode=advisory (named locks; a MariaDB server started
// for this executable). Entries are read raw from information_schema.METADATA_LOCK_INFO (the
// metadata_lock_info plugin, installed here): a holder's named lock on the name's hash, and
// each waiting connection's "dlockw:" mark on it (the server keeps no queue of waiters). Two
// tests of this mode only follow the fixture: hashed names, and an unknown mode.
#include <unistd.h>

#include <dlock/dlock.hpp>
#include <mutex>

#include "conformance/suite.hpp"
#include "support/mariadb_server.hpp"

namespace dlock::test {
namespace {

mariadb_server& server() {
  static mariadb_server s;
  static bool plugin = [] {
    s.query("INSTALL SONAME 'metadata_lock_info'");
    return true;
  }();
  (void)plugin;
  return s;
}

// Named locks (held, or "waiting" marks) on the hash of `lock` in database dlock_adv
// (support/mode_apart.hpp).
std::size_t named_locks(const std::string& lock) {
  return std::stoul(
      server()
          .query("SELECT count(*) FROM information_schema.METADATA_LOCK_INFO m,"
                 " (SELECT LEFT(SHA2(CONCAT('dlock_adv:', ?), 256), 36) AS h) k"
                 " WHERE m.LOCK_TYPE = 'User lock' AND (m.TABLE_SCHEMA = CONCAT('dlock:', k.h)"
                 " OR m.TABLE_SCHEMA LIKE CONCAT('dlockw:', k.h, ':%'))",
                 {lock})
          .at(0));
}

class mysql_advisory_fixture : public backend_fixture {
 public:
  std::string url() override { return server().url("ttl=2s&mode=advisory"); }
  std::size_t raw_entries(const std::string& lock) override { return named_locks(lock); }
  // A named lock lives as long as its connection: ending the session's lease from the server
  // side is killing that connection (found by the session lock it holds).
  void expire(const dlock::session& s) override {
    auto id = server().query("SELECT IS_USED_LOCK(CONCAT('dlock_session:', ?))", {s.id()}).at(0);
    if (!id.empty() && id.find_first_not_of("0123456789") == std::string::npos) {
      server().query("KILL " + id);
    }
  }
  std::unique_ptr<stalled_server> stall() override {
    return std::make_unique<stopped_process>(server().pid());
  }
};

INSTANTIATE_TEST_SUITE_P(mysql_advisory, conformance,
                         ::testing::Values(fixture_param{
                             "mysql_advisory",
                             [] { return std::make_unique<mysql_advisory_fixture>(); }}),
                         param_name);

// GET_LOCK names are at most 64 characters: names of any length and content are hashed, so
// hostile, Unicode and long names (also two sharing their first 254 bytes) are distinct locks.
TEST(mysql_advisory, hostile_unicode_and_long_names_are_distinct_locks) {
  auto url = server().url("ttl=5s&mode=advisory");
  auto s1 = dlock::session::open(url);
  auto s2 = dlock::session::open(url);
  const std::vector<std::string> names = {
      "it's",
      "semi;colon",
      "'; DROP TABLE dlock_entries; --",
      "double \"quoted\"",
      "back\\slash %_ wild",
      "Ünïcødé 🔒 ключ",
      std::string(255, 'n'),
      std::string(254, 'n') + "m",
      "Case",
      "case",
      "trailing space ",
  };
  std::vector<std::unique_ptr<dlock::mutex>> held;
  for (const auto& n : names) {
    SCOPED_TRACE(n);
    dlock::mutex m1(s1, n);
    dlock::mutex m2(s2, n);
    ASSERT_TRUE(m1.try_lock());
    EXPECT_EQ(named_locks(n), 1u);
    EXPECT_FALSE(m2.try_lock());
    auto first = m1.token();
    m1.unlock();
    EXPECT_EQ(named_locks(n), 0u);
    ASSERT_TRUE(m2.try_lock());
    EXPECT_GT(m2.token(), first);
    m2.unlock();
    // Held on by s1 while the next names are tried: none of them is the same lock.
    held.push_back(std::make_unique<dlock::mutex>(s1, n));
    ASSERT_TRUE(held.back()->try_lock());
  }
}

TEST(mysql_advisory, an_unknown_mode_is_invalid_argument) {
  try {
    (void)dlock::session::open(server().url("mode=gossip"));
    FAIL() << "opened an unknown mode";
  } catch (const dlock::system_error& e) {
    EXPECT_EQ(e.code(), dlock::errc::invalid_argument) << e.what();
  }
}

// With lower_case_table_names=1, /casefold and /CaseFold are one database: locks are keyed by
// the server's name for it, not the URL's spelling (a tester's two holders of one name).
TEST(mysql_advisory, a_database_named_in_another_case_is_one_database) {
  mariadb_server folding({"--lower-case-table-names=1"});
  folding.query("CREATE DATABASE casefold");
  folding.query("GRANT ALL ON casefold.* TO 'dlock'@'%'");
  const auto base = folding.url("");
  auto at = [&](const std::string& db) {
    return base.substr(0, base.rfind('/') + 1) + db + "?mode=advisory";
  };
  auto a = session::open(at("casefold"));
  mutex held(a, "x");
  held.lock();
  auto b = session::open(at("CaseFold"));
  mutex other(b, "x");
  EXPECT_FALSE(other.try_lock());
  held.unlock();
  EXPECT_TRUE(other.try_lock());
  other.unlock();
}

// A KILL of the session's connection is logged with how it ended, before the hold is told
// lost (it used to say nothing of why).
TEST(mysql_advisory, a_killed_session_connection_is_logged_with_how_it_ended) {
  struct errors final : dlock::observer {
    std::mutex mu;
    std::vector<std::string> seen;
    void on_log(dlock::log_level level, std::string_view message) override {
      std::lock_guard lk(mu);
      if (level == dlock::log_level::error) seen.emplace_back(message);
    }
  };
  auto log = std::make_shared<errors>();
  auto s = session::open(server().url("ttl=30s&mode=advisory"), {.observer = log});
  mutex m(s, "killed-" + std::to_string(::getpid()));
  m.lock();
  auto hold = m.current_hold();
  mysql_advisory_fixture().expire(s);
  ASSERT_TRUE(poll_until([&] { return !hold.is_held(); }, 20s));
  std::lock_guard lk(log->mu);
  ASSERT_FALSE(log->seen.empty()) << "nothing logged";
  EXPECT_NE(log->seen.front().find("'s connection: closed, with no error sent"), std::string::npos)
      << log->seen.front();
}

}  // namespace
}  // namespace dlock::test
