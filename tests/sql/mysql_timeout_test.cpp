// Issue 12 item 14: a MariaDB server whose wait_timeout (5 s) is shorter than dlock's renewal
// period must not end idle holds. The session sets its own connection timeouts (lease mode:
// above its renewal period; mode=advisory: exactly its TTL, which is its lease), or refuses
// the TTL naming the server setting.
#include <gtest/gtest.h>

#include <atomic>
#include <dlock/dlock.hpp>
#include <iostream>
#include <memory>
#include <thread>

#include "support/mariadb_server.hpp"
#include "support/net.hpp"

namespace dlock::test {
namespace {

using namespace std::chrono_literals;

mariadb_server& server() {
  static mariadb_server s({"--wait-timeout=5"});
  return s;
}

TEST(mysql_wait_timeout, idle_holds_outlive_a_short_server_wait_timeout) {
  auto& db = server();
  ASSERT_EQ(db.query("SELECT @@GLOBAL.wait_timeout").at(0), "5");
  struct holder {
    std::string query;
    std::string lock;
    session s;
    std::unique_ptr<mutex> m;
    std::shared_ptr<std::atomic<int>> changes = std::make_shared<std::atomic<int>>(0);
  };
  std::vector<holder> holders;
  for (std::string q : {"ttl=15s", "ttl=30s", "ttl=15s&mode=advisory", "ttl=30s&mode=advisory"}) {
    holder h{q, "idle-" + random_suffix(), session::open(db.url(q)), nullptr};
    h.m = std::make_unique<mutex>(h.s, h.lock);
    h.m->lock();
    // Any state change (suspect or lost) while idle is the fault.
    h.m->current_hold().on_state_change([c = h.changes](hold_state) { ++*c; });
    holders.push_back(std::move(h));
  }
  // Past two server wait_timeouts and one renewal period (TTL/3 = 5 s and 10 s): the old code
  // lost every one of these holds here.
  std::this_thread::sleep_for(12s);
  for (auto& h : holders) {
    SCOPED_TRACE(h.query);
    EXPECT_TRUE(h.m->is_held());
    EXPECT_EQ(h.changes->load(), 0) << "state now " << to_string(h.m->current_hold().state());
    EXPECT_FALSE(h.m->current_hold().lost_token().stop_requested());
    auto other = session::open(db.url(h.query));
    mutex m2(other, h.lock);
    EXPECT_FALSE(m2.try_lock()) << "another client was granted an idle hold";
    other.close();
  }
  for (auto& h : holders) {
    SCOPED_TRACE(h.query);
    std::error_code ec;
    h.m->unlock(ec);
    EXPECT_FALSE(ec) << ec.message();
    h.s.close();
  }
}

// The server cannot keep a connection idle for longer than its maximum wait_timeout (365
// days): a TTL that needs more is refused up front, naming the setting, in both modes.
TEST(mysql_wait_timeout, a_ttl_the_server_cannot_keep_is_refused_naming_wait_timeout) {
  auto& db = server();
  for (std::string q : {"ttl=9600h", "ttl=9600h&mode=advisory"}) {
    SCOPED_TRACE(q);
    try {
      session::open(db.url(q)).close();
      ADD_FAILURE() << "a lease longer than the server's wait_timeout allows was accepted";
    } catch (const dlock::system_error& e) {
      EXPECT_EQ(e.code(), make_error_code(errc::invalid_argument)) << e.what();
      EXPECT_NE(std::string(e.what()).find("wait_timeout"), std::string::npos) << e.what();
      std::cout << "refused: " << e.what() << "\n";
    }
  }
}

}  // namespace
}  // namespace dlock::test
