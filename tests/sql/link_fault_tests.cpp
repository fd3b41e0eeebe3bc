// Faults of the link between a SQL session and its server, through a loopback proxy: a
// contender cut off, a half-open link under a holder, an open that waits out an outage, a host
// exiting while a release crawls over a slow link.
#include <gtest/gtest.h>

#include <atomic>
#include <dlock/dlock.hpp>
#include <string>
#include <thread>

#include "sql/sql_admin.hpp"
#include "sql/sql_faults.hpp"
#include "support/net.hpp"
#include "support/partition_cases.hpp"
#include "support/poll.hpp"
#include "support/process.hpp"
#include "support/tcp_proxy.hpp"

namespace dlock::test {
namespace {

using namespace std::chrono_literals;

// A contender polling with try_lock() whose link is blackholed: the session ends at its lease,
// with an enqueue in flight on the dead link; try_lock() must return session_expired within a
// second of that, not after request_timeout (support/partition_cases.hpp).
partition::env through_proxy(const std::string& mode) {
  return {admin().port(),
          [mode](std::uint16_t port, std::chrono::milliseconds ttl) {
            auto url =
                admin().url("dlock", "secret", mode + "ttl=" + std::to_string(ttl.count()) + "ms");
            auto from = ":" + std::to_string(admin().port()) + "/";
            return url.replace(url.find(from), from.size(), ":" + std::to_string(port) + "/");
          },
          nullptr};
}

// A release whose connection is cut before its answer (a proxy that resets or half-closes the
// client's side) confirmed nothing: unlock() said it had succeeded, the lock held on for the
// rest of the lease (a tester's: the retried removal found the session ended and read that
// as "gone, so removed").
TEST_F(sql_faults, a_release_cut_off_with_its_connection_is_not_reported_done) {
  for (const std::string mode : {"", "mode=advisory&"}) {
    SCOPED_TRACE(mode);
    tcp_proxy px(admin().port());
    auto s = dlock::session::open(through_proxy(mode).url(px.port(), 8s));
    dlock::mutex m(s, name("cut-release"));
    m.lock();
    px.drop_next_reply();
    std::error_code ec;
    m.unlock(ec);
    EXPECT_TRUE(ec) << "unlock() reported a release whose answer never came";
    px.pass();
  }
}

TEST_F(sql_faults, a_late_enqueue_leaves_no_ghost) {
  partition::a_late_enqueue_leaves_no_ghost(through_proxy(""), name("late"));
  partition::a_late_enqueue_leaves_no_ghost(through_proxy("mode=advisory&"), name("late-adv"));
}

// Lease mode only: mode=advisory's locks are the connection's, and the server frees them when
// its side ends, whatever the route (docs/guarantees.md: a window only the fencing token covers).
TEST_F(sql_faults, a_connection_ended_on_the_servers_side_only_frees_nothing_early) {
  partition::a_connection_ended_on_the_servers_side_only_frees_nothing_early(
      through_proxy(""), name("server-side"), 3s);
}

// `dlock doctor` says how a session reaches the server: directly, or through a hop (then lease
// mode's sessions are lease-only, and mode=advisory's window is named). PostgreSQL's advisory
// mode said "direct" through any proxy that was not a pooler.
TEST_F(sql_faults, doctor_names_a_route_through_a_hop) {
  tcp_proxy px(admin().port());
  auto route_of = [](const std::string& url) {
    auto s = dlock::session::open(url);
    for (const auto& f : dlock::diagnose(s).checks) {
      if (f.check == "route") return f;
    }
    return dlock::check_finding{};
  };
  for (const std::string mode : {"", "mode=advisory&"}) {
    SCOPED_TRACE(mode);
    auto direct = route_of(through_proxy(mode).url(admin().port(), 8s));
    EXPECT_EQ(direct.value, "direct");
    EXPECT_EQ(direct.status, dlock::check_status::ok);
    auto hop = route_of(through_proxy(mode).url(px.port(), 8s));
    EXPECT_EQ(hop.value, "through a hop") << hop.reason;
    EXPECT_EQ(hop.status, mode.empty() ? dlock::check_status::ok : dlock::check_status::weakened);
    // What the window breaks: a holder told it lost the lock before another is granted.
    EXPECT_EQ(hop.guarantee, mode.empty() ? "exclusion" : "loss-signal");
  }
}

TEST_F(sql_faults, a_cut_off_poller_is_told_session_expired_promptly) {
  partition::contender_cut_off_is_told_promptly(through_proxy(""), name("poller"), 2s,
                                                partition::contender::polling);
}

TEST_F(sql_faults, a_cut_off_advisory_poller_is_told_session_expired_promptly) {
  partition::contender_cut_off_is_told_promptly(through_proxy("mode=advisory&"), name("poller-adv"),
                                                2s, partition::contender::polling);
}

TEST_F(sql_faults, a_cut_off_poller_logging_in_anew_is_told_session_expired_promptly) {
  partition::contender_cut_off_is_told_promptly(through_proxy(""), name("poller-new"), 2s,
                                                partition::contender::polling_reconnecting);
}

TEST_F(sql_faults, a_cut_off_advisory_poller_logging_in_anew_is_told_session_expired_promptly) {
  partition::contender_cut_off_is_told_promptly(through_proxy("mode=advisory&"),
                                                name("poller-adv-new"), 2s,
                                                partition::contender::polling_reconnecting);
}

// The holder's replies lost, its requests still reaching the server, until `m`'s holder is
// told it lost: its loss callback takes 30 ms (a slow handler: the server must wait for it),
// then a third client asks for the lock, and must be refused.
void told_lost_before_the_cut(const std::string& url, const std::string& probe_url,
                              const std::string& lock, const session_options& options,
                              tcp_proxy& px, const std::string& end_says = {}) {
  auto s = session::open(url, options);
  auto probe = session::open(probe_url);
  mutex m(s, lock);
  m.lock();
  std::atomic<int> third_granted{-1};
  std::stop_callback told(m.current_hold().lost_token(), [&] {
    std::this_thread::sleep_for(30ms);
    mutex third(probe, lock);
    std::error_code ec;
    const bool got = third.try_lock(ec);
    if (got) third.unlock();
    third_granted = got ? 1 : 0;
  });
  px.drop_replies();
  ASSERT_TRUE(poll_until([&] { return third_granted.load() >= 0; }, 30s)) << "never told lost";
  EXPECT_EQ(third_granted.load(), 0) << "the lock was free on the server before its holder "
                                        "had been told it was lost";
  px.pass();
  std::error_code ec;
  m.unlock(ec);
  if (end_says.empty()) return;
  // How the session ended, as a later call on it says.
  try {
    (void)dlock::inspect(s, lock);
    ADD_FAILURE() << "a call on the ended session succeeded";
  } catch (const dlock::system_error& e) {
    EXPECT_NE(std::string(e.what()).find(end_says), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find("the server"), std::string::npos) << e.what();
  }
}

// The client's lease ends first. Its holds must be told lost before dlock cuts the connection,
// for where the connection is the session (here the advisory mode: no server-side lease at
// all) the cut frees the lock on the server. A tester's waiter was granted 1.5 ms after the
// loss, and 53 ms before it with the holder's thread paused. (TTL 2 s, below request_timeout.)
TEST_F(sql_faults, a_holder_is_told_lost_before_its_connection_is_cut) {
  tcp_proxy px(admin().port());
  told_lost_before_the_cut(through_proxy("mode=advisory&").url(px.port(), 2s),
                           through_proxy("mode=advisory&").url(admin().port(), 2s),
                           name("told-first"), {}, px);
}

// The request timeout ends the session first (1 s, under a 6 s lease): the renewal goes
// unanswered, and cutting it off closes the connection, which frees the locks on the server.
// The client library's own read timeout closed it a few ms before the holds heard; now dlock
// keeps that timeout itself and tells the holds first (request_guard.hpp).
TEST_F(sql_faults, a_holder_whose_request_times_out_is_told_lost_before_its_connection_is_cut) {
  for (std::string mode : {"", "mode=advisory&"}) {
    SCOPED_TRACE(mode.empty() ? "lease mode" : mode);
    tcp_proxy px(admin().port());
    told_lost_before_the_cut(
        through_proxy(mode).url(px.port(), 6s), through_proxy(mode).url(admin().port(), 6s),
        name("timed-out-" + std::to_string(mode.size())), {.request_timeout = 1s}, px,
        // dlock's cut, not the server's (a tester's PostgreSQL said "the server ended it").
        "so dlock closed it");
  }
}

// An open that waited out an outage counts its lease from the attempt that made the session,
// not from the first: a tester's `dlock run -w 30s` started while the server was down got a
// lease already spent, and was granted and then lost at once as the server came back.
TEST_F(sql_faults, a_session_opened_after_an_outage_gets_its_whole_lease) {
  tcp_proxy px(admin().port());
  px.reset();  // the server refuses every connection for now
  std::jthread heal([&] {
    std::this_thread::sleep_for(1500ms);
    px.pass();
  });
  auto s = session::open(through_proxy("").url(px.port(), 2s), {.open_timeout = 10s});
  mutex m(s, name("late-open"));
  m.lock();
  const auto left = m.current_hold().valid_until() - std::chrono::steady_clock::now();
  EXPECT_GT(left, 1s) << "the lease was counted from the first attempt, 1.5 s before the open";
  m.unlock();
}

// The host returns from main() while its release is retried in the background on a slow link
// (a fault-run worker crashed so, in OpenSSL's cleanup, with a remover logging in anew): by
// the time the atexit handlers registered before libdlock's run, no dlock thread is inside a
// backend call (support/exit_probe.cpp).
TEST_F(sql_faults, a_host_exiting_during_a_background_release_leaves_no_call_in_flight) {
  tcp_proxy px(admin().port());
  auto url = through_proxy("").url(px.port(), 20s);
  child_process probe(std::vector<std::string>{DLOCK_EXIT_PROBE, url, name("exit")});
  ASSERT_TRUE(probe.wait_for_line("granted", 30s));
  px.delay(3s);
  probe.write_stdin("release\n");
  ASSERT_TRUE(probe.wait_for_line("released", 10s));
  auto inflight = probe.wait_for_line("in flight", 10s);
  ASSERT_TRUE(inflight);
  EXPECT_NE(*inflight, "in flight 0") << "the set-up left nothing in flight at exit";
  auto at_exit = probe.wait_for_line("at exit", 10s);
  ASSERT_TRUE(at_exit) << "the probe's own handler never ran";
  EXPECT_EQ(*at_exit, "at exit 0");
  EXPECT_EQ(probe.wait(10s), 0);
  px.pass();
}

}  // namespace
}  // namespace dlock::test
