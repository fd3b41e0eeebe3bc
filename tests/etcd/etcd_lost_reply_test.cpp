// The ambiguous failure on etcd (issue 15): the server applies the acquire's Txn (the
// contender key is put) but its reply never arrives (a loopback proxy
// forwards the request, then resets the connection when the reply comes). The retry must find
// its own key (the Txn puts only if this lease has no key on the lock): no duplicate contender,
// no orphan, and the lock stays usable.
#include <gtest/gtest.h>

#include <dlock/dlock.hpp>
#include <thread>

#include "etcd/etcd_env.hpp"
#include "support/net.hpp"
#include "support/poll.hpp"
#include "support/tcp_proxy.hpp"

namespace dlock::test {
namespace {

using namespace std::chrono_literals;
using clock = std::chrono::steady_clock;

TEST(etcd_lost_reply, a_txn_whose_reply_is_lost_leaves_no_duplicate) {
  auto& server = shared_etcd();
  tcp_proxy proxy(server.port());
  const auto prefix = "lr" + random_suffix();
  // A long TTL keeps keep-alive rounds off the link: the next request on it is the acquire's.
  const auto direct = "etcd://" + server.address() + "/" + prefix + "?ttl=30s";
  const auto via_proxy =
      "etcd://127.0.0.1:" + std::to_string(proxy.port()) + "/" + prefix + "?ttl=30s";
  int txns_hit = 0;
  for (int round = 0; round < 12 && txns_hit < 3; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    const auto name = "l" + std::to_string(round);
    const auto contenders = [&] { return server.keys(prefix + "/" + name + "/").size(); };
    // Contender keys and companions (P/NAME\0dlock/..., a candidate's only) alike.
    const auto all_keys = [&] { return server.keys(prefix + "/" + name).size(); };
    auto holder_s = dlock::session::open(direct);
    dlock::mutex holder(holder_s, name);
    holder.lock();
    auto s = dlock::session::open(via_proxy);
    dlock::mutex m(s, name);

    const auto before = proxy.dropped_replies();
    proxy.drop_next_reply();
    std::error_code ec;
    bool got = false;
    std::jthread waiter([&] { got = m.try_lock_until(clock::now() + 30s, {}, ec); });
    ASSERT_TRUE(poll_until([&] { return proxy.dropped_replies() > before; }));
    proxy.pass();
    // The Txn carries the contender key in its (uncompressed) protobuf body.
    if (proxy.last_dropped_request().find(prefix + "/" + name + "/") != std::string::npos) {
      ++txns_hit;
    }
    ASSERT_TRUE(poll_until([&] { return contenders() == 2; }));
    std::this_thread::sleep_for(300ms);  // past the retry: still one key of ours
    EXPECT_EQ(contenders(), 2u) << "a duplicate contender key";
    EXPECT_EQ(all_keys(), 2u) << "a mutex's entry left a companion key";
    holder.unlock();
    waiter.join();
    ASSERT_TRUE(got) << ec.message();
    EXPECT_EQ(contenders(), 1u) << "a duplicate or orphan contender is left";
    EXPECT_EQ(all_keys(), 1u);
    m.unlock();
    EXPECT_TRUE(poll_until([&] { return all_keys() == 0; }));
    // Still usable through the same proxy.
    ASSERT_TRUE(m.try_lock_for(10s));
    m.unlock();
    holder_s.close();
    s.close();
  }
  EXPECT_GE(txns_hit, 3) << "the dropped reply was rarely the Txn's";
}

}  // namespace
}  // namespace dlock::test
