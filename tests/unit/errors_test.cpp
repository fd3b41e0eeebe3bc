// The error category: codes, messages, portable conditions.
#include <gtest/gtest.h>

#include <dlock/errors.hpp>
#include <dlock/mutex.hpp>
#include <dlock/session.hpp>

TEST(errors, codes_map_to_conditions) {
  using dlock::condition;
  using dlock::errc;
  EXPECT_TRUE(make_error_code(errc::backend_unavailable) == condition::retryable);
  EXPECT_TRUE(make_error_code(errc::timed_out) == condition::retryable);
  EXPECT_TRUE(make_error_code(errc::session_expired) == condition::ownership_lost);
  EXPECT_TRUE(make_error_code(errc::lock_lost) == condition::ownership_lost);
  EXPECT_TRUE(make_error_code(errc::not_held) == condition::misuse);
  EXPECT_FALSE(make_error_code(errc::backend_error) == condition::retryable);
  EXPECT_STREQ(dlock::category().name(), "dlock");
  for (int e = 1; e <= static_cast<int>(errc::unsupported); ++e) {
    EXPECT_NE(dlock::category().message(e), "unknown dlock error") << e;
  }
  dlock::system_error ex(make_error_code(errc::timed_out), "lock 'x'");
  EXPECT_NE(std::string(ex.what()).find("lock 'x'"), std::string::npos);
}

TEST(errors, sessions_refuse_bad_input_with_a_clear_message) {
  for (auto [url, says] : std::vector<std::pair<std::string, std::string>>{
           {"nosuch://x", "unknown scheme 'nosuch'"},
           {"memory://x?ttl=0", "ttl must be greater than zero"},
           {"memory://x?ttl=abc", "duration 'abc'"},
           {"memory://x?ttl=5ms", "ttl 5ms is too short"},
           {"memory://x?tll=5s", "unknown parameter 'tll' for memory (known: ttl keepalive)"},
           {"zk://127.0.0.1:1/?session_timeot=5s", "unknown parameter 'session_timeot'"},
           {"sqlite://relative/path", "want sqlite:///path"},
           {"sqlite:///nonexistent-dir/deeper/locks.db", "cannot open database"},
           {"not a url", "missing '://'"}}) {
    std::error_code ec;
    auto s = dlock::session::open(url, {}, ec);
    EXPECT_FALSE(s) << url;
    EXPECT_TRUE(ec) << url;
    // The error_code form keeps the detail too, for the calling thread.
    EXPECT_NE(dlock::last_error_message().find(says), std::string::npos)
        << url << " -> " << dlock::last_error_message();
    try {
      (void)dlock::session::open(url);
      ADD_FAILURE() << url;
    } catch (const dlock::system_error& e) {
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << url << " -> " << e.what();
    }
  }
  std::error_code ec;
  (void)dlock::session::open("memory://x", {.ttl = std::chrono::milliseconds{-5}}, ec);
  EXPECT_EQ(ec, dlock::errc::invalid_argument);
}

TEST(errors, messages_do_not_repeat_the_code_text) {
  auto s = dlock::session::open("memory://repeat");
  dlock::mutex m(s, "x");
  m.lock();
  try {
    m.lock();
    ADD_FAILURE() << "a non-reentrant handle locked twice";
  } catch (const dlock::system_error& e) {
    EXPECT_EQ(e.code(), dlock::errc::already_held);
    std::string what = e.what();
    EXPECT_EQ(what.find("already held"), what.rfind("already held")) << what;
  }
  try {
    dlock::mutex bad(s, "");
    ADD_FAILURE() << "an empty name was accepted";
  } catch (const dlock::system_error& e) {
    EXPECT_EQ(std::string(e.what()).find("invalid argument"), std::string::npos) << e.what();
  }
  m.unlock();
}

TEST(errors, unlock_of_a_lock_not_held_replaces_the_last_message) {
  auto s = dlock::session::open("memory://stale");
  std::error_code ec;
  (void)dlock::session::open("nosuch://x", {}, ec);  // an earlier, unrelated failure
  ASSERT_NE(dlock::last_error_message().find("nosuch"), std::string::npos);
  dlock::mutex m(s, "never-locked");
  m.unlock(ec);
  EXPECT_EQ(ec, dlock::errc::not_held);
  EXPECT_EQ(dlock::last_error_message().find("nosuch"), std::string::npos)
      << dlock::last_error_message();
  EXPECT_NE(dlock::last_error_message().find("never-locked"), std::string::npos)
      << dlock::last_error_message();
}
