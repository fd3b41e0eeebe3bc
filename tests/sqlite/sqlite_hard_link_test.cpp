// One SQLite lock file under two names (hard links). SQLite keeps a database's WAL and
// shared-memory index beside the name it was opened by, so a process that opened the second
// name made its own hard.db-wal and -shm, saw none of the first name's locks and was granted a
// lock already held (SQLite's "How To Corrupt", 2.4). A file with more than one name is now
// refused at open, whichever name is opened, and a session whose file gets a second name
// while it uses it ends as expired.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <dlock/dlock.hpp>
#include <dlock/doctor.hpp>
#include <string>

#include "support/net.hpp"
#include "support/poll.hpp"

namespace dlock::test {
namespace {

using namespace std::chrono_literals;

bool on_disk(const std::string& path) { return ::access(path.c_str(), F_OK) == 0; }

class sqlite_hard_link : public ::testing::Test {
 protected:
  void link_file() { ASSERT_EQ(::link(path_.c_str(), other_.c_str()), 0); }

  // The refusal of opening `path`: unsupported, naming the file, its count and the way out.
  static void expect_refused(const std::string& path, bool observe) {
    try {
      auto s = session::open("sqlite://" + path, {.observe_only = observe});
      mutex m(s, "k");
      ADD_FAILURE() << "opened " << path << " (observe_only=" << observe
                    << "); a lock there: " << (observe ? false : m.try_lock());
    } catch (const dlock::system_error& e) {
      const std::string what = e.what();
      EXPECT_EQ(e.code(), errc::unsupported) << what;
      EXPECT_NE(what.find("'" + path + "'"), std::string::npos) << what;
      EXPECT_NE(what.find("2 hard links"), std::string::npos) << what;
      EXPECT_NE(what.find("-samefile"), std::string::npos) << what;
    }
  }

  temp_dir dir_{"dlock-sqlite-hard-link"};
  std::string path_ = dir_.path() + "/locks.db";
  std::string other_ = dir_.path() + "/hard.db";
};

// The user's report: `dlock run` via hard.db ran while another held the lock via locks.db.
TEST_F(sqlite_hard_link, a_second_name_for_a_file_in_use_is_refused) {
  auto holder = session::open("sqlite://" + path_);
  mutex held(holder, "s");
  held.lock();
  link_file();
  expect_refused(other_, false);
  // Refused before SQLite made a WAL and index of its own beside the second name.
  EXPECT_FALSE(on_disk(other_ + "-wal"));
  EXPECT_FALSE(on_disk(other_ + "-shm"));
  held.unlock();
}

TEST_F(sqlite_hard_link, a_file_with_two_names_is_refused_by_either_name) {
  {
    auto s = session::open("sqlite://" + path_);
    mutex m(s, "k");
    m.lock();
    m.unlock();
  }
  link_file();
  for (const auto& name : {path_, other_}) {
    expect_refused(name, false);
    expect_refused(name, true);  // an observer (`dlock status`) would see a stale file
  }
  // One name again: usable.
  ASSERT_EQ(::unlink(other_.c_str()), 0);
  auto s = session::open("sqlite://" + path_);
  mutex m(s, "k");
  EXPECT_TRUE(m.try_lock());
}

// A link made while a session uses the file: a process may have opened the other name in
// between, so the session's holds are in doubt, as with a replaced file.
TEST_F(sqlite_hard_link, a_holder_whose_file_gets_a_second_name_is_told_it_lost) {
  auto holder = session::open("sqlite://" + path_ + "?ttl=1s");
  mutex held(holder, "s");
  held.lock();
  auto hold = held.current_hold();
  link_file();
  EXPECT_TRUE(poll_until([&] { return hold.state() == hold_state::lost; }, 5s, 10ms))
      << "the holder still believes it holds: " << to_string(hold.state());
  mutex again(holder, "t");
  try {
    (void)again.try_lock();
    ADD_FAILURE() << "a session whose file has two names granted a lock";
  } catch (const dlock::system_error& e) {
    EXPECT_EQ(e.code(), errc::session_expired) << e.what();
  }
}

TEST_F(sqlite_hard_link, doctor_finds_a_second_name) {
  auto s = session::open("sqlite://" + path_);
  auto before = diagnose(s);
  link_file();
  auto after = diagnose(s);
  auto finding = [](const diagnosis& d) -> const check_finding* {
    for (const auto& c : d.checks) {
      if (c.check == "hard-links") return &c;
    }
    return nullptr;
  };
  ASSERT_NE(finding(before), nullptr);
  EXPECT_EQ(finding(before)->status, check_status::ok);
  ASSERT_NE(finding(after), nullptr);
  EXPECT_EQ(finding(after)->status, check_status::unsafe);
  EXPECT_EQ(finding(after)->guarantee, "exclusion");
  EXPECT_EQ(finding(after)->value, "2");
  for (const auto& g : after.guarantees) {
    if (g.name == "exclusion") {
      EXPECT_EQ(g.status, guarantee_status::no) << g.why;
    }
  }
}

}  // namespace
}  // namespace dlock::test
