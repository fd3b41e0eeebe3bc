// Sessions and leases: loss signals, expiry while holding and while waiting, close.
#include <atomic>
#include <dlock/dlock.hpp>
#include <functional>
#include <optional>
#include <system_error>
#include <thread>

#include "conformance/suite.hpp"

namespace dlock::test {

// A std::stop_callback on the loss signal that lets go of what was lost (the way hold.hpp and
// election.hpp invite: "stop when lost_token() fires"): it ran while dlock held the hold's
// mutex, and unlock(), resign() or release() from it waited on that mutex for ever (a
// tester's; the process could not exit). A mutex, a leadership and a permit.
TEST_P(conformance, a_loss_callback_may_let_go_of_what_was_lost) {
  auto a = open();
  const auto& caps = a.capabilities();
  dlock::mutex m(a, lock_name());
  m.lock();
  std::atomic<int> let_go{0};
  std::stop_callback unlock_it(m.current_hold().lost_token(), [&] {
    m.unlock();
    ++let_go;
  });
  std::optional<dlock::leadership> lead;
  std::optional<std::stop_callback<std::function<void()>>> resign_it;
  if (caps.values) {
    dlock::election e(a, lock_name() + "-e");
    lead.emplace(e.campaign("me"));
    resign_it.emplace(lead->lost_token(), std::function<void()>([&] {
                        lead->resign();
                        ++let_go;
                      }));
  }
  std::optional<dlock::permit> permit;
  std::optional<std::stop_callback<std::function<void()>>> release_it;
  if (caps.permits) {
    dlock::semaphore sem(a, lock_name() + "-s", 2);
    permit.emplace(sem.acquire());
    release_it.emplace(permit->lost_token(), std::function<void()>([&] {
                         permit->release();
                         ++let_go;
                       }));
  }
  const int want = 1 + (caps.values ? 1 : 0) + (caps.permits ? 1 : 0);
  fx().expire(a);
  EXPECT_TRUE(poll_until([&] { return let_go.load() == want; }, fx().ttl() * 3 + 5s))
      << let_go.load() << " of " << want << " callbacks came back from letting go";
  EXPECT_FALSE(m.is_held());
}

// A hold let go after its session ended but before the session told it (here from the loss
// callback of another hold of the session, told first) ended `released`: its lost_token()
// never fired and nothing said the work under it ran unprotected. Each hold's callback lets go
// of the other; whichever is told first, both must end lost.
TEST_P(conformance, a_hold_let_go_before_its_loss_was_told_ends_lost) {
  auto a = open();
  dlock::mutex first(a, lock_name() + "-1");
  dlock::mutex second(a, lock_name() + "-2");
  first.lock();
  second.lock();
  auto h1 = first.current_hold();
  auto h2 = second.current_hold();
  std::atomic<bool> took1{false}, took2{false};
  std::atomic<int> done{0};
  std::error_code ec1, ec2;
  std::stop_callback lets_go_of_second(h1.lost_token(), [&] {
    if (!took2.exchange(true)) second.unlock(ec2);
    ++done;
  });
  std::stop_callback lets_go_of_first(h2.lost_token(), [&] {
    if (!took1.exchange(true)) first.unlock(ec1);
    ++done;
  });
  fx().expire(a);
  ASSERT_TRUE(poll_until([&] { return done.load() > 0; }, fx().ttl() * 3 + 5s));
  EXPECT_TRUE(poll_until([&] { return done.load() == 2; }, 5s))
      << "a hold let go in the other's loss callback never heard of its own loss";
  EXPECT_TRUE(h1.lost_token().stop_requested());
  EXPECT_TRUE(h2.lost_token().stop_requested());
  EXPECT_EQ(h1.state(), dlock::hold_state::lost);
  EXPECT_EQ(h2.state(), dlock::hold_state::lost);
  if (took1) {
    EXPECT_EQ(ec1, dlock::errc::lock_lost) << ec1.message();
  }
  if (took2) {
    EXPECT_EQ(ec2, dlock::errc::lock_lost) << ec2.message();
  }
}

// An operator call on a session that has ended answers, or fails as the session's end: Redis
// threw `cancelled`, which reads as the caller's own stop request (a tester's).
TEST_P(conformance, an_operator_call_on_an_ended_session_answers_or_fails_as_its_end) {
  auto a = open();
  dlock::mutex m(a, lock_name());
  m.lock();
  fx().expire(a);
  ASSERT_TRUE(
      poll_until([&] { return a.state() == dlock::session_state::expired; }, fx().ttl() * 3 + 5s));
  for (int closed = 0; closed < 2; ++closed) {
    try {
      (void)dlock::inspect(a, lock_name());
    } catch (const dlock::system_error& e) {
      EXPECT_TRUE(e.code() == dlock::errc::session_expired ||
                  e.code() == dlock::errc::session_closed)
          << e.what();
    }
    a.close();
  }
}

TEST_P(conformance, a_holder_whose_lease_ends_is_told_and_another_gets_a_larger_token) {
  auto a = open();
  auto b = open();
  dlock::mutex stale(a, lock_name());
  dlock::mutex next(b, lock_name());
  stale.lock();
  auto h = stale.current_hold();
  std::atomic<bool> called{false};
  h.on_state_change([&](dlock::hold_state s) {
    if (s == dlock::hold_state::lost) called = true;
  });
  fx().expire(a);
  ASSERT_TRUE(poll_until([&] { return h.lost_token().stop_requested(); }, fx().ttl() * 3))
      << "no loss signal after the lease ended";
  // The callbacks run right after the token fires, on the thread that saw the loss.
  EXPECT_TRUE(poll_until([&] { return called.load(); }, 5s)) << "no state callback on the loss";
  EXPECT_FALSE(h.is_held());
  EXPECT_EQ(h.state(), dlock::hold_state::lost);
  EXPECT_EQ(a.state(), dlock::session_state::expired);
  ASSERT_TRUE(next.try_lock_for(fx().ttl() * 3));
  EXPECT_GT(next.token(), h.token());
  std::error_code ec;
  stale.unlock(ec);
  EXPECT_EQ(ec, dlock::errc::lock_lost);
  EXPECT_TRUE(next.is_held()) << "the stale holder's unlock removed the new holder";
  auto c = open();
  dlock::mutex third(c, lock_name());
  EXPECT_FALSE(third.try_lock());
}

// A waiter whose session another client ended (force_unlock of a lock it held ends the session
// with its entries everywhere) is woken when the entry ahead leaves. It must not take the lock
// from its last view, which still shows its own entry: a backend that grants from the view
// (wait_knowing) checks its session first. SQLite's fault run found this (tokens out of order).
TEST_P(conformance, a_waiter_whose_session_was_ended_is_not_granted_from_its_last_view) {
  if (!caps().ends_other_sessions) GTEST_SKIP() << "no other session can be ended here";
  auto hs = open();
  auto ws = open();
  auto op = open();
  dlock::mutex other(ws, lock_name() + "-other");
  other.lock();
  dlock::mutex holder(hs, lock_name());
  holder.lock();
  std::atomic<bool> granted{false}, failed{false};
  std::jthread waiter([&] {
    dlock::mutex m(ws, lock_name());
    try {
      m.lock();
      granted = true;
      m.unlock();
    } catch (const std::system_error&) {
      failed = true;
    }
  });
  ASSERT_TRUE(poll_until([&] { return dlock::inspect(hs, lock_name()).size() == 2; }, 10s, 1ms));
  ASSERT_EQ(dlock::force_unlock(op, lock_name() + "-other").size(), 1u);
  holder.unlock();
  ASSERT_TRUE(poll_until([&] { return granted || failed; }, fx().ttl() * 3 + 10s, 1ms));
  EXPECT_FALSE(granted) << "granted from a view that still showed its ended session's entry";
}

// An operator breaks a stuck lock (dlock unlock NAME --force): the holder's session ends,
// its holder is told lost, the waiter is granted with a larger token; a backend that cannot
// end another client's session refuses and changes nothing.
TEST_P(conformance, force_unlock_ends_the_holders_session_and_the_waiter_is_granted) {
  auto a = open();
  auto b = open();
  auto op = open();
  dlock::mutex stuck(a, lock_name());
  dlock::mutex next(b, lock_name());
  stuck.lock();
  auto h = stuck.current_hold();
  if (!caps().ends_other_sessions) {
    try {
      (void)dlock::force_unlock(op, lock_name());
      ADD_FAILURE() << "force_unlock succeeded on a backend that says it cannot";
    } catch (const dlock::system_error& e) {
      EXPECT_EQ(e.code(), dlock::errc::unsupported) << e.what();
    }
    EXPECT_TRUE(h.is_held());
    EXPECT_FALSE(next.try_lock());
    return;
  }
  EXPECT_THROW((void)dlock::force_unlock(a, lock_name()), dlock::system_error)
      << "a session may not force its own hold";
  std::atomic<bool> granted{false};
  std::jthread waiter([&] { granted = next.try_lock_for(fx().ttl() * 3); });
  auto ended = dlock::force_unlock(op, lock_name());
  ASSERT_EQ(ended.size(), 1u);
  EXPECT_EQ(ended[0].token, h.token().value);
  waiter.join();
  ASSERT_TRUE(granted.load()) << "the waiter was not granted after the holder's session ended";
  EXPECT_GT(next.token(), h.token());
  EXPECT_TRUE(poll_until([&] { return h.lost_token().stop_requested(); }, fx().ttl() * 3))
      << "the forced-out holder was never told";
  std::error_code ec;
  stuck.unlock(ec);
  EXPECT_EQ(ec, dlock::errc::lock_lost);
  EXPECT_TRUE(next.is_held()) << "the forced-out holder's unlock removed the new holder";
  EXPECT_TRUE(dlock::force_unlock(op, lock_name() + "-free").empty());
}

// With nobody taking the lock in between, the forced-out holder's prompt release still finds
// its hold gone: Redis removed the entry it still found and reported success, so the holder
// never heard that its work had run unlocked since the force_unlock (a tester).
TEST_P(conformance, a_forced_out_holders_prompt_release_reports_the_loss) {
  if (!caps().ends_other_sessions) GTEST_SKIP() << "force_unlock cannot end a session here";
  auto a = open();
  auto op = open();
  dlock::mutex stuck(a, lock_name());
  stuck.lock();
  ASSERT_EQ(dlock::force_unlock(op, lock_name()).size(), 1u);
  std::error_code ec;
  stuck.unlock(ec);
  EXPECT_EQ(ec, dlock::errc::lock_lost) << ec.message();
}

TEST_P(conformance, a_waiter_whose_session_expires_fails_and_the_next_live_waiter_is_served) {
  auto hs = open();
  auto ws = open();
  auto ls = open();
  dlock::mutex holder(hs, lock_name());
  dlock::mutex doomed(ws, lock_name());
  dlock::mutex live(ls, lock_name());
  holder.lock();
  std::error_code doomed_ec, live_ec;
  bool doomed_granted = true, live_granted = false;
  std::jthread t1([&] {
    doomed_granted = doomed.try_lock_until(std::chrono::steady_clock::now() + 30s, {}, doomed_ec);
  });
  ASSERT_TRUE(poll_until([&] { return fx().raw_entries(lock_name()) == 2; }));
  std::jthread t2([&] {
    live_granted = live.try_lock_until(std::chrono::steady_clock::now() + 30s, {}, live_ec);
  });
  ASSERT_TRUE(poll_until([&] { return fx().raw_entries(lock_name()) >= 3; }));
  fx().expire(ws);
  t1.join();
  EXPECT_FALSE(doomed_granted);
  EXPECT_TRUE(doomed_ec == dlock::condition::ownership_lost) << doomed_ec.message();
  holder.unlock();
  t2.join();
  EXPECT_TRUE(live_granted) << live_ec.message();
  EXPECT_TRUE(live.is_held());
}

TEST_P(conformance, closing_a_session_releases_its_locks_and_fails_its_waiters) {
  auto a = open();
  auto b = open();
  dlock::mutex held(a, lock_name());
  dlock::mutex other(b, lock_name());
  held.lock();
  auto h = held.current_hold();
  a.close();
  EXPECT_EQ(a.state(), dlock::session_state::closed);
  EXPECT_EQ(h.state(), dlock::hold_state::released);
  EXPECT_TRUE(other.try_lock_for(5s)) << "close() did not release";
  std::error_code ec;
  dlock::mutex after(a, lock_name("other"));
  EXPECT_FALSE(after.try_lock(ec));
  EXPECT_EQ(ec, dlock::errc::session_closed);
  // Its unlock says the session was closed, not "lost" (a false alarm after an orderly close).
  held.unlock(ec);
  EXPECT_EQ(ec, dlock::errc::session_closed) << ec.message();
  EXPECT_FALSE(h.lost_token().stop_requested());
  // The handle whose hold close() released says so too, not "already held by this handle".
  EXPECT_FALSE(held.try_lock(ec));
  EXPECT_EQ(ec, dlock::errc::session_closed) << ec.message();
}

// A waiter woken by close() read the state before close() set it, and failed with
// session_expired (a tester: about half the time), an alarm for a lease lost at every orderly
// shutdown.
TEST_P(conformance, waiters_of_a_closed_session_fail_with_session_closed) {
  auto holder = open();
  dlock::mutex held(holder, lock_name());
  held.lock();
  for (int round = 0; round < 5; ++round) {
    auto s = open();
    std::error_code ec;
    std::jthread waiter([&] {
      dlock::mutex m(s, lock_name());
      (void)m.try_lock_until(std::chrono::steady_clock::now() + 30s, {}, ec);
    });
    std::this_thread::sleep_for(30ms);  // into its wait
    s.close();
    waiter.join();
    EXPECT_EQ(ec, dlock::errc::session_closed) << "round " << round << ": " << ec.message();
  }
}

TEST_P(conformance, session_state_changes_are_reported) {
  auto s = open();
  std::atomic<int> expired{0};
  s.on_state_change([&](dlock::session_state st) {
    if (st == dlock::session_state::expired) ++expired;
  });
  EXPECT_EQ(s.state(), dlock::session_state::live);
  EXPECT_GT(s.ttl().count(), 0);
  fx().expire(s);
  EXPECT_TRUE(poll_until([&] { return expired.load() == 1; }, fx().ttl() * 3));
  EXPECT_EQ(s.state(), dlock::session_state::expired);
}

TEST_P(conformance, a_hold_stays_valid_across_many_renewals) {
  auto s = open();
  dlock::mutex m(s, lock_name());
  m.lock();
  auto h = m.current_hold();
  auto first_deadline = h.valid_until();
  std::this_thread::sleep_for(fx().ttl() * 3 / 2);
  EXPECT_TRUE(h.is_held());
  EXPECT_EQ(h.state(), dlock::hold_state::held);
  EXPECT_GT(h.valid_until(), first_deadline) << "the lease was not renewed";
  EXPECT_FALSE(h.lost_token().stop_requested());
}

// Issue 12 item 4: re-entering a hold that was lost (the lease ended server-side, another
// client was granted) must fail, never count up.
TEST_P(conformance, re_entering_a_lost_hold_fails) {
  auto a = open();
  auto b = open();
  dlock::recursive_mutex stale(a, lock_name());
  dlock::mutex next(b, lock_name());
  stale.lock();
  auto h = stale.current_hold();
  fx().expire(a);
  ASSERT_TRUE(poll_until([&] { return h.lost_token().stop_requested(); }, fx().ttl() * 3));
  ASSERT_TRUE(next.try_lock_for(fx().ttl() * 3));
  std::error_code ec;
  EXPECT_FALSE(stale.try_lock(ec)) << "re-entered a lost hold";
  EXPECT_TRUE(ec == dlock::errc::session_expired || ec == dlock::errc::lock_lost) << ec.message();
  ec.clear();
  stale.lock(ec);
  EXPECT_TRUE(ec == dlock::errc::session_expired || ec == dlock::errc::lock_lost) << ec.message();
  EXPECT_EQ(stale.hold_count(), 1u);
  stale.unlock(ec);
  EXPECT_EQ(ec, dlock::errc::lock_lost);
  EXPECT_TRUE(next.is_held());
}

// Issue 12 item 9: an operator ends the holder's session, another client takes the lock, and
// the old holder releases before its own renewal noticed: the release reports lock_lost (its
// entry was no longer the holder's), never plain success.
TEST_P(conformance, releasing_after_an_admin_ended_the_session_reports_lock_lost) {
  dlock::session_options o;
  o.keepalive_interval = fx().ttl() * 9 / 10;  // no renewal notices it before the release
  auto a = dlock::session::open(fx().url(), o);
  auto b = open();
  dlock::mutex stale(a, lock_name());
  dlock::mutex next(b, lock_name());
  stale.lock();
  fx().expire(a);
  ASSERT_TRUE(next.try_lock_for(fx().ttl() * 3));
  std::error_code ec;
  stale.unlock(ec);
  EXPECT_EQ(ec, dlock::errc::lock_lost) << ec.message();
  EXPECT_TRUE(next.is_held()) << "the stale holder's unlock removed the new holder";
}

}  // namespace dlock::test
