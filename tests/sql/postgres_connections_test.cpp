// PostgreSQL out of connections: a session needs one connection, and a waiter wants two more
// (LISTEN, and its timed reads' own); where the server refuses them (max_connections, a role's
// CONNECTION LIMIT) the waiter must still be granted, on its session's connection. A second
// tester's timed waiters on a server with max_connections=20 never saw their grant: their
// listings went to a second connection the server refused, and the queue stood still until
// every waiter's deadline.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <dlock/dlock.hpp>
#include <string>
#include <thread>

#include "support/net.hpp"
#include "support/postgres_server.hpp"

namespace dlock::test {
namespace {

using namespace std::chrono_literals;

TEST(postgres_connections, a_timed_waiter_refused_its_other_connections_is_still_granted) {
  static postgres_server server;
  const auto role = "capped_" + random_suffix();
  server.query("CREATE ROLE " + role + " LOGIN PASSWORD 'secret' CONNECTION LIMIT 2", {},
               "postgres");
  server.query("GRANT CREATE ON DATABASE dlock TO " + role, {}, "postgres");
  const auto url = "postgres://" + role + ":secret@127.0.0.1:" + std::to_string(server.port()) +
                   "/dlock?schema=" + role + "&ttl=5s";
  // The role's two connections: one per session. The waiter's others are refused.
  auto holder_side = session::open(url);
  auto waiter_side = session::open(url);
  dlock::mutex held(holder_side, "k");
  held.lock();
  std::atomic<int> outcome{0};  // 1: granted, 2: not
  std::jthread waiter([&] {
    dlock::mutex m(waiter_side, "k");
    outcome = m.try_lock_for(20s) ? 1 : 2;
    if (outcome == 1) m.unlock();
  });
  std::this_thread::sleep_for(500ms);  // into its wait, its other connections refused
  const auto released = std::chrono::steady_clock::now();
  held.unlock();
  waiter.join();
  const auto took = std::chrono::steady_clock::now() - released;
  EXPECT_EQ(outcome.load(), 1) << "the waiter was never granted";
  // Not a timed assertion of speed: a queue that stands still until the deadline takes 20 s.
  EXPECT_LT(took, 15s) << std::chrono::duration_cast<std::chrono::milliseconds>(took).count()
                       << " ms from the release to the waiter's end";
}

// sslmode=require against a server without TLS: a configuration no retry mends, refused at
// once as permission_denied (the CLI's 77, as etcd's refused TLS), not retried for the whole
// open timeout and reported unavailable (69), as an outside tester's was.
TEST(postgres_connections, a_tls_requirement_the_server_cannot_meet_is_refused_at_once) {
  static postgres_server server;
  dlock::session_options o;
  o.open_timeout = 10s;
  const auto start = std::chrono::steady_clock::now();
  std::error_code ec;
  auto s = session::open(server.url("sslmode=require"), o, ec);
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_FALSE(s);
  EXPECT_EQ(ec, dlock::errc::permission_denied) << ec.message() << ": " << last_error_message();
  EXPECT_LT(took, 5s) << "retried as if the server were unavailable";
}

}  // namespace
}  // namespace dlock::test
