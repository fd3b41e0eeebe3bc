// One Watch stream per session, multiplexed (issue 15): a session's waiters share one stream,
// each watching only its own key; a cancelled wait cancels its watch on the server; a stream
// that breaks while a waiter waits is opened again with the watch created again from the
// revision it asked for, so a deletion during the outage still wakes it. Counted with etcd's
// own /metrics: Watch streams started, and the store's current watchers.
#include <gtest/gtest.h>

#include <dlock/dlock.hpp>
#include <stop_token>
#include <thread>

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

}  // namespace
}  // namespace dlock::test
