// Server-side lease revoke (etcdctl lease revoke), the end an operator or the server's TTL
// gives a session: the conformance suite checks that a holder is told lost and a waiter fails
// (within a few TTLs); here, that both learn it at the session's next keep-alive, long before
// the TTL would have run out, and that the waiter's acquire says session_expired.
#include <gtest/gtest.h>

#include <dlock/dlock.hpp>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "etcd/etcd_env.hpp"
#include "support/net.hpp"
#include "support/poll.hpp"

namespace dlock::test {
namespace {

using namespace std::chrono_literals;
using clock = std::chrono::steady_clock;

// TTL 9 s, keep-alive every 1 s: "promptly" is within a keep-alive round (plus slack), far
// inside the TTL.
constexpr auto keepalive = 1s;
constexpr auto prompt = keepalive + 1500ms;

std::string url(const std::string& prefix) {
  return "etcd://" + shared_etcd().address() + "/" + prefix + "?ttl=9s&keepalive=1s";
}

// Not the lease but one key deleted by another client (etcdctl del, a clean-up): the next
// contender is granted at once; the holder heard of it only at its release (a fault trial:
// `dlock run` ran CMD on). Now each keep-alive round checks the session's keys too. Releases
// racing that check are no such news: many short holds under the 1 s keep-alive stay live.
TEST(etcd_lease, a_holder_whose_key_another_client_deletes_is_told_lost_at_its_next_keepalive) {
  const auto prefix = "dk" + random_suffix();
  auto a = dlock::session::open(url(prefix));
  dlock::mutex held(a, "l");
  held.lock();
  auto h = held.current_hold();
  auto keys = shared_etcd().keys(prefix + "/l/");
  ASSERT_EQ(keys.size(), 1u);
  auto [rc, out] = shared_etcd().etcdctl({"del", keys[0]});
  ASSERT_EQ(rc, 0) << out;
  auto b = dlock::session::open(url(prefix));
  dlock::mutex next(b, "l");
  ASSERT_TRUE(next.try_lock()) << "the deleted key still held the lock";
  EXPECT_TRUE(poll_until([&] { return h.lost_token().stop_requested(); }, prompt))
      << "the holder was not told within a keep-alive round of the delete";
  next.unlock();
  dlock::mutex m(b, "short");
  for (int i = 0; i < 300; ++i) {
    m.lock();
    m.unlock();
  }
  EXPECT_EQ(b.state(), dlock::session_state::live);
}

TEST(etcd_lease, a_revoked_holder_is_told_lost_at_its_next_keepalive) {
  const auto prefix = "rv" + random_suffix();
  auto a = dlock::session::open(url(prefix));
  auto b = dlock::session::open(url(prefix));
  dlock::mutex stale(a, "l");
  dlock::mutex next(b, "l");
  stale.lock();
  auto h = stale.current_hold();
  const auto revoked = clock::now();
  expire_etcd_session(a, shared_etcd());
  ASSERT_TRUE(poll_until([&] { return h.lost_token().stop_requested(); }, prompt))
      << "the holder was not told within a keep-alive round of the revoke";
  EXPECT_EQ(a.state(), dlock::session_state::expired);
  // The keys went with the lease: the next contender is granted at once.
  ASSERT_TRUE(next.try_lock_for(2s));
  EXPECT_GT(next.token(), h.token());
  std::printf(
      "holder told lost %lld ms after the revoke\n",
      static_cast<long long>(
          std::chrono::duration_cast<std::chrono::milliseconds>(clock::now() - revoked).count()));
}

TEST(etcd_lease, a_revoked_waiters_acquire_returns_session_expired_promptly) {
  const auto prefix = "rw" + random_suffix();
  auto hs = dlock::session::open(url(prefix));
  auto ws = dlock::session::open(url(prefix));
  dlock::mutex holder(hs, "l");
  dlock::mutex doomed(ws, "l");
  holder.lock();
  std::error_code ec;
  bool granted = true;
  clock::time_point returned;
  std::jthread waiter([&] {
    granted = doomed.try_lock_until(clock::now() + 60s, {}, ec);
    returned = clock::now();
  });
  ASSERT_TRUE(poll_until([&] { return shared_etcd().keys(prefix + "/l/").size() == 2; }));
  std::this_thread::sleep_for(100ms);  // in its wait
  const auto revoked = clock::now();
  expire_etcd_session(ws, shared_etcd());
  waiter.join();
  EXPECT_FALSE(granted);
  EXPECT_EQ(ec, dlock::errc::session_expired) << ec.message();
  EXPECT_LE(returned - revoked, prompt) << "the waiter learned of the revoke late";
  EXPECT_TRUE(holder.current_hold().is_held());
  std::printf(
      "waiter's acquire returned %lld ms after the revoke: %s\n",
      static_cast<long long>(
          std::chrono::duration_cast<std::chrono::milliseconds>(returned - revoked).count()),
      ec.message().c_str());
}

}  // namespace
}  // namespace dlock::test

namespace dlock::test {
namespace {

// A TTL under etcd's minimum lease is raised by the server (a tester's 10 ms became 2 s,
// silently): session::ttl() says the lease in force, and an observer hears it at the open.
TEST(etcd_lease, a_ttl_the_server_raises_is_told_at_the_open) {
  struct logs final : dlock::observer {
    void on_log(dlock::log_level, std::string_view message) override {
      std::lock_guard lk(mu);
      seen += std::string(message) + "\n";
    }
    std::mutex mu;
    std::string seen;
  };
  auto obs = std::make_shared<logs>();
  auto s = dlock::session::open(
      "etcd://" + shared_etcd().address() + "/tr" + random_suffix() + "?ttl=100ms",
      {.observer = obs});
  EXPECT_GT(s.ttl(), 100ms);
  std::lock_guard lk(obs->mu);
  EXPECT_NE(obs->seen.find("the server granted a TTL of"), std::string::npos) << obs->seen;
}

}  // namespace
}  // namespace dlock::test
