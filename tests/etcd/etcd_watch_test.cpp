// One Watch stream per session, multiplexed (issue 15): a session's waiters share one stream,
// each watching only its own key; a cancelled wait cancels its watch on the server; a stream
// that breaks while a waiter waits is opened again with the watch created again from the
// revision it asked for, so a deletion during the outage still wakes it. Counted with etcd's
// own /metrics: Watch streams started, and the store's current watchers. A watch is set up at
// the present (etcd serves one from a past revision only on its 100 ms catch-up tick), so a key
// deleted between its listing and its watch is caught by the read that follows the watch.
#include <gtest/gtest.h>

#include <dlock/dlock.hpp>
#include <stop_token>
#include <thread>

#include "backends/etcd/etcd_client.hpp"
#include "backends/etcd/etcd_config.hpp"
#include "core/url.hpp"
#include "etcd/etcd_env.hpp"
#include "support/net.hpp"
#include "support/poll.hpp"
#include "support/tcp_proxy.hpp"

namespace dlock::test {
namespace {

using namespace std::chrono_literals;
using clock = std::chrono::steady_clock;

double watch_streams_started() {
  return etcd_metric_sum("grpc_server_started_total", "grpc_method=\"Watch\"");
}
double watchers() { return etcd_metric_sum("etcd_debugging_mvcc_watcher_total"); }

TEST(etcd_watch, a_sessions_waiters_share_one_stream_and_a_cancelled_wait_cancels_its_watch) {
  const auto url = "etcd://" + shared_etcd().address() + "/w" + random_suffix() + "?ttl=30s";
  auto holder_s = dlock::session::open(url);
  dlock::mutex holder(holder_s, "w");
  holder.lock();
  const double streams0 = watch_streams_started(), watchers0 = watchers();
  auto s = dlock::session::open(url);
  constexpr int n = 6;
  std::vector<std::stop_source> stops(n);
  std::atomic<int> granted{0};
  std::vector<std::jthread> ts;
  for (int i = 0; i < n; ++i) {
    ts.emplace_back([&, i] {
      dlock::mutex m(s, "w");
      std::error_code ec;
      if (m.try_lock_until(clock::now() + 30s, stops[static_cast<std::size_t>(i)].get_token(),
                           ec)) {
        ++granted;
        m.unlock();
      }
    });
  }
  ASSERT_TRUE(poll_until([&] { return watchers() >= watchers0 + n; }))
      << watchers() - watchers0 << " watchers for " << n << " waiters";
  EXPECT_EQ(watch_streams_started() - streams0, 1) << "one Watch stream for the session";
  for (int i = 0; i < n / 2; ++i) stops[static_cast<std::size_t>(i)].request_stop();
  EXPECT_TRUE(poll_until([&] { return watchers() <= watchers0 + n - n / 2; }))
      << "cancelled waits left " << watchers() - watchers0 - (n - n / 2) << " watches behind";
  holder.unlock();
  ts.clear();
  EXPECT_EQ(granted, n - n / 2);
  EXPECT_EQ(watch_streams_started() - streams0, 1);
  s.close();
  holder_s.close();
}

TEST(etcd_watch, a_broken_stream_is_opened_again_and_misses_no_deletion) {
  auto& server = shared_etcd();
  tcp_proxy proxy(server.port());
  const auto prefix = "/wb" + random_suffix() + "?ttl=30s";
  auto holder_s = dlock::session::open("etcd://" + server.address() + prefix);
  dlock::mutex holder(holder_s, "b");
  holder.lock();
  const double watchers0 = watchers();
  auto s = dlock::session::open("etcd://127.0.0.1:" + std::to_string(proxy.port()) + prefix);
  dlock::mutex m(s, "b");
  std::error_code ec;
  bool got = false;
  // Only the watch can end the wait before its deadline (no keep-alive, no timeout until then).
  std::jthread waiter([&] { got = m.try_lock_until(clock::now() + 8s, {}, ec); });
  ASSERT_TRUE(poll_until([&] { return watchers() >= watchers0 + 1; }));
  const auto streams0 = watch_streams_started();
  // The waiter's connection breaks, and stays broken while the holder releases: the delete
  // happens while no stream is up.
  proxy.reset();
  std::this_thread::sleep_for(200ms);
  holder.unlock();
  std::this_thread::sleep_for(300ms);
  proxy.pass();
  waiter.join();
  EXPECT_TRUE(got) << ec.message();
  EXPECT_GE(watch_streams_started() - streams0, 1) << "the stream was not opened again";
  m.unlock();
  s.close();
  holder_s.close();
}

// A key listed, then deleted (or deleted and put again) before its waiter's watch is in place:
// the watch starts after the deletion, so only the read that follows it can end the wait.
TEST(etcd_watch, a_key_gone_before_its_watch_is_in_place_ends_the_wait) {
  using namespace dlock::detail;
  auto u = parse_url("etcd://" + shared_etcd().address() + "/wg" + random_suffix());
  ASSERT_TRUE(u);
  session_info info{"id", "test", 30s, 5s, false};
  auto cfg = etcd::parse_config(*u, info);
  ASSERT_TRUE(cfg);
  auto c = etcd::client::open(*cfg);
  ASSERT_TRUE(c) << c.error().message;
  auto& cl = **c;
  // Opens the session's stream (a watch is set up at the present only on an open stream).
  const std::string other = "/wg-other" + random_suffix();
  ASSERT_TRUE(
      cl.await_delete(std::vector<etcd::watched_key>{{other, 1, 1}}, clock::now() + 300ms, {}));
  for (bool put_again : {false, true}) {
    const std::string key = "/wg-key" + random_suffix();
    ASSERT_TRUE(cl.txn({}, {etcd::put_op(key, "v", 0)}, {}));
    auto listed = cl.range(key, {}, false);
    ASSERT_TRUE(listed && listed->kvs.size() == 1);
    const etcd::watched_key k{key, listed->revision + 1, listed->kvs[0].create_revision};
    ASSERT_TRUE(cl.txn({}, {etcd::del_op(key)}, {}));
    if (put_again) {
      ASSERT_TRUE(cl.txn({}, {etcd::put_op(key, "v2", 0)}, {}));
    }
    const auto t0 = clock::now();
    auto gone = cl.await_delete(std::span(&k, 1), t0 + 5s, {});
    ASSERT_TRUE(gone) << gone.error().message;
    EXPECT_TRUE(*gone) << (put_again ? "deleted and put again" : "deleted")
                       << " before the watch: the wait ran to its deadline";
    EXPECT_LT(clock::now() - t0, 4s);
  }
  cl.shut_down();
}

}  // namespace
}  // namespace dlock::test
