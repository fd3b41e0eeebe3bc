// Leader election (dlock::election), on every backend that declares values; where a backend
// does not, that it refuses elections clearly.
#include <signal.h>

#include <atomic>
#include <dlock/dlock.hpp>
#include <mutex>
#include <thread>

#include "conformance/suite.hpp"
#include "support/poll.hpp"

namespace dlock::test {
namespace {

// What an observer saw: "-" for no leader, else "VALUE@VERSION".
std::string seen_as(const std::optional<leader_info>& l) {
  return l ? l->value + "@" + std::to_string(l->version) : "-";
}

// Observes an election on its own session and thread, recording every change.
class recorder {
 public:
  recorder(dlock::session s, const std::string& name)
      : thread_([this, s, name](std::stop_token stop) {
          try {
            dlock::election(s, name).observe(
                [this](const std::optional<leader_info>& l) {
                  std::lock_guard lk(mu_);
                  seen_.push_back(seen_as(l));
                  terms_.push_back(l ? l->token.value : 0);
                },
                stop);
          } catch (const std::exception& e) {
            std::lock_guard lk(mu_);
            seen_.push_back(std::string("error ") + e.what());
          }
        }) {}
  std::vector<std::string> seen() const {
    std::lock_guard lk(mu_);
    return seen_;
  }
  std::vector<std::uint64_t> terms() const {
    std::lock_guard lk(mu_);
    return terms_;
  }
  // Waits until the last thing seen is `what`.
  bool sees(const std::string& what, std::chrono::milliseconds timeout) const {
    return poll_until(
        [&] {
          auto s = seen();
          return !s.empty() && s.back() == what;
        },
        timeout);
  }
  void stop() {
    thread_.request_stop();
    if (thread_.joinable()) thread_.join();
  }

 private:
  mutable std::mutex mu_;
  std::vector<std::string> seen_;
  std::vector<std::uint64_t> terms_;
  std::jthread thread_;
};

}  // namespace

// The fixture's URL with a 20 s lease instead of 2 s: a watcher's fallback look (Redis: every
// quarter TTL, 5 s) then comes too late to pass for a wake-up.
static std::string long_lease_url(std::string url) {
  for (std::string key : {"ttl=2s", "session_timeout=2s"}) {
    if (auto at = url.find(key); at != std::string::npos) url.insert(at + key.size() - 1, "0");
  }
  return url;
}

TEST_P(conformance, an_election_has_one_leader_and_the_next_candidate_leads_when_it_resigns) {
  auto s = open();
  dlock::election e(s, lock_name());
  if (!caps().values) {
    for (auto attempt : {0, 1}) {
      try {
        if (attempt == 0) (void)e.try_campaign_for("x", 1s);
        if (attempt == 1) (void)e.leader();
        ADD_FAILURE() << "a backend without values ran an election";
      } catch (const dlock::system_error& e) {
        EXPECT_EQ(e.code(), dlock::errc::unsupported) << e.what();
      }
    }
    EXPECT_EQ(fx().raw_entries(lock_name()), 0u) << "a refused campaign left an entry";
    GTEST_SKIP() << "this mode has no elections (see its capabilities); the refusal was checked";
  }
  EXPECT_FALSE(e.leader()) << "a leader before any campaign";
  auto a = e.try_campaign_for("a", 5s);
  ASSERT_TRUE(a);
  EXPECT_TRUE(a.is_held());
  auto l = e.leader();
  ASSERT_TRUE(l);
  EXPECT_EQ(l->value, "a");
  EXPECT_EQ(l->version, 1u);
  EXPECT_EQ(l->token, a.token());
  dlock::election other(open(), lock_name());
  EXPECT_FALSE(other.try_campaign_for("b", 200ms)) << "two leaders at once";
  std::optional<dlock::leadership> b;
  std::jthread candidate([&] { b = other.try_campaign_for("b", 30s); });
  EXPECT_TRUE(poll_until([&] { return fx().raw_entries(lock_name()) == 2; }, 10s));
  a.resign();
  EXPECT_FALSE(a);
  candidate.join();
  ASSERT_TRUE(b && *b) << "the waiting candidate was not elected when the leader resigned";
  EXPECT_GT(b->token(), l->token) << "a new term must have a larger token";
  l = e.leader();
  ASSERT_TRUE(l);
  EXPECT_EQ(l->value, "b");
  b->resign();
  EXPECT_FALSE(e.leader());
}

TEST_P(conformance, only_the_leader_proclaims_and_a_lost_leader_is_refused) {
  if (!caps().values) GTEST_SKIP() << "this mode has no elections (see its capabilities)";
  auto s = open();
  dlock::election e(s, lock_name());
  auto lead = e.try_campaign_for("first", 5s);
  ASSERT_TRUE(lead);
  lead.proclaim(std::string("second\0with a NUL", 17));
  auto l = e.leader();
  ASSERT_TRUE(l);
  EXPECT_EQ(l->value, std::string("second\0with a NUL", 17)) << "values are bytes";
  EXPECT_EQ(l->version, 2u);
  EXPECT_EQ(l->token, lead.token()) << "proclaim must not start a new term";
  try {
    lead.proclaim(std::string(16 * 1024 + 1, 'x'));
    ADD_FAILURE() << "a value over 16 KiB was proclaimed";
  } catch (const dlock::system_error& err) {
    EXPECT_EQ(err.code(), dlock::errc::invalid_argument) << err.what();
  }
  fx().expire(s);
  EXPECT_TRUE(poll_until([&] { return lead.lost_token().stop_requested(); }, fx().ttl() * 3))
      << "the leader whose lease ended was never told";
  try {
    lead.proclaim("late");
    ADD_FAILURE() << "a lost leader proclaimed";
  } catch (const dlock::system_error& err) {
    EXPECT_EQ(err.code(), dlock::errc::lock_lost) << err.what();
  }
  auto now = dlock::election(open(), lock_name()).leader();
  EXPECT_TRUE(!now || now->value != "late");
  dlock::leadership none;
  EXPECT_THROW(none.proclaim("x"), dlock::system_error);
}

TEST_P(conformance, every_observer_sees_the_same_sequence_of_leaders_and_values) {
  if (!caps().values) GTEST_SKIP() << "this mode has no elections (see its capabilities)";
  recorder one(open(), lock_name()), two(open(), lock_name());
  ASSERT_TRUE(one.sees("-", 10s) && two.sees("-", 10s));
  dlock::election a(open(), lock_name()), b(open(), lock_name());
  auto la = a.try_campaign_for("a", 5s);
  ASSERT_TRUE(la);
  ASSERT_TRUE(one.sees("a@1", 10s) && two.sees("a@1", 10s));
  la.proclaim("a2");
  ASSERT_TRUE(one.sees("a2@2", 10s) && two.sees("a2@2", 10s));
  std::optional<dlock::leadership> lb;
  std::jthread candidate([&] { lb = b.try_campaign_for("b", 30s); });
  EXPECT_TRUE(poll_until([&] { return fx().raw_entries(lock_name()) == 2; }, 10s));
  la.resign();
  candidate.join();
  ASSERT_TRUE(lb && *lb);
  ASSERT_TRUE(one.sees("b@1", 10s) && two.sees("b@1", 10s));
  lb->resign();
  ASSERT_TRUE(one.sees("-", 10s) && two.sees("-", 10s));
  one.stop();
  two.stop();
  const std::vector<std::string> expected{"-", "a@1", "a2@2", "b@1", "-"};
  EXPECT_EQ(one.seen(), expected);
  EXPECT_EQ(two.seen(), expected);
  EXPECT_LT(one.terms()[1], one.terms()[3]) << "terms must grow";
}

TEST_P(conformance, a_killed_leader_is_replaced_and_observers_see_the_new_term) {
  DLOCK_REQUIRE_MULTI_PROCESS();
  if (!caps().values) GTEST_SKIP() << "this mode has no elections (see its capabilities)";
  auto w = worker({"lead", fx().url(), lock_name(), "crashing"});
  auto first = token_of(w.wait_for_line("granted", 20s));
  ASSERT_GT(first, 0u);
  recorder watch(open(), lock_name());
  ASSERT_TRUE(watch.sees("crashing@1", 10s));
  w.signal(SIGKILL);
  ASSERT_TRUE(w.wait(5s).has_value());
  dlock::election e(open(), lock_name());
  auto lead = e.try_campaign_for("next", fx().ttl() + 5s);
  ASSERT_TRUE(lead) << "no successor within the dead leader's lease";
  EXPECT_GT(lead.token().value, first);
  EXPECT_TRUE(watch.sees("next@1", 10s)) << "the observer missed the new leader";
  watch.stop();
}

TEST_P(conformance, a_paused_leader_is_told_it_lost_and_may_not_proclaim) {
  DLOCK_REQUIRE_MULTI_PROCESS();
  if (!caps().values) GTEST_SKIP() << "this mode has no elections (see its capabilities)";
  temp_dir dir;
  auto fence = dir.path() + "/fence";
  auto stale = worker({"lead", fx().url(), lock_name(), "paused"});
  auto stale_token = token_of(stale.wait_for_line("granted", 20s));
  ASSERT_GT(stale_token, 0u);
  stale.signal(SIGSTOP);
  auto fresh = worker({"lead", fx().url(), lock_name(), "fresh"});
  auto fresh_token = token_of(fresh.wait_for_line("granted", fx().ttl() * 3 + 10s));
  ASSERT_GT(fresh_token, stale_token);
  fresh.write_stdin("fence " + fence + "\n");
  EXPECT_EQ(fresh.read_line(10s).value_or(""), "write accepted");
  stale.signal(SIGCONT);
  EXPECT_TRUE(stale.wait_for_line("lost", 10s).has_value()) << "no loss signal after resuming";
  stale.write_stdin("proclaim stale\n");
  EXPECT_EQ(stale.wait_for_line("proclaim", 10s).value_or(""), "proclaim refused lock_lost");
  stale.write_stdin("fence " + fence + "\n");
  EXPECT_EQ(stale.wait_for_line("write", 10s).value_or(""), "write refused");
  auto l = dlock::election(open(), lock_name()).leader();
  ASSERT_TRUE(l);
  EXPECT_EQ(l->value, "fresh");
}

TEST_P(conformance, a_name_is_a_lock_or_an_election_never_both) {
  if (!caps().values) GTEST_SKIP() << "this mode has no elections (see its capabilities)";
  auto s = open();
  recorder watching(dlock::session::open(long_lease_url(fx().url())), lock_name());
  ASSERT_TRUE(watching.sees("-", 10s));
  dlock::mutex m(s, lock_name());
  ASSERT_TRUE(m.try_lock());
  // An observer is told at once, not at its next look (a lock's entry pushed it nothing).
  EXPECT_TRUE(poll_until([&] { return watching.seen().back().starts_with("error"); }, 3s))
      << watching.seen().back();
  EXPECT_NE(watching.seen().back().find("used as a lock"), std::string::npos);
  dlock::election e(open(), lock_name());
  for (auto attempt : {0, 1}) {
    try {
      if (attempt == 0) (void)e.try_campaign_for("x", 2s);
      if (attempt == 1) (void)e.leader();
      ADD_FAILURE() << "an election ran on a held lock's name";
    } catch (const dlock::system_error& err) {
      EXPECT_EQ(err.code(), dlock::errc::invalid_argument) << err.what();
      EXPECT_NE(std::string(err.what()).find("lock"), std::string::npos) << err.what();
    }
  }
  m.unlock();
  auto lead = e.try_campaign_for("x", 5s);
  ASSERT_TRUE(lead);
  dlock::mutex late(open(), lock_name());
  try {
    (void)late.try_lock_for(2s);
    ADD_FAILURE() << "a lock was granted on an election's name";
  } catch (const dlock::system_error& err) {
    EXPECT_EQ(err.code(), dlock::errc::invalid_argument) << err.what();
    EXPECT_NE(std::string(err.what()).find("election"), std::string::npos) << err.what();
  }
}

// Watchers on a session closed under them are told session_closed at once, as waiters are:
// an etcd observer said "unavailable" (retryable: a caller retried for ever) after 2 s, and a
// Redis observer went on for 3 s.
TEST_P(conformance, an_observer_is_told_when_its_session_is_closed) {
  if (!caps().values) GTEST_SKIP() << "this mode has no elections (see its capabilities)";
  auto s = dlock::session::open(long_lease_url(fx().url()));
  dlock::election e(s, lock_name());
  std::atomic<bool> done{false};
  std::error_code got;
  std::jthread watcher([&] {
    try {
      e.observe([](const std::optional<leader_info>&) {}, {});
    } catch (const dlock::system_error& err) {
      got = err.code();
    }
    done = true;
  });
  std::this_thread::sleep_for(300ms);  // waiting by now (if not, it reads a closed session)
  const auto closed = std::chrono::steady_clock::now();
  s.close();
  ASSERT_TRUE(poll_until([&] { return done.load(); }, 20s)) << "observe() never returned";
  const auto took = std::chrono::steady_clock::now() - closed;
  EXPECT_EQ(got, dlock::errc::session_closed) << got.message();
  EXPECT_LT(took, 2s) << "observe() went on after close()";
  for (auto call : {0, 1}) {
    try {
      if (call == 0) (void)e.leader();
      if (call == 1) (void)e.next_change(std::nullopt, std::chrono::steady_clock::now() + 5s);
      ADD_FAILURE() << "a closed session's election answered";
    } catch (const dlock::system_error& err) {
      EXPECT_EQ(err.code(), dlock::errc::session_closed) << err.what();
    }
  }
}

}  // namespace dlock::test
