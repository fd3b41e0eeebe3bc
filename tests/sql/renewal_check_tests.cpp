// What a renewal checks besides the lease on the SQL servers: that the session's own entries
// are still stored, and that looking for them never costs a hold (sql_lease_session.hpp).
#include <gtest/gtest.h>

#include <dlock/dlock.hpp>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "sql/sql_admin.hpp"
#include "sql/sql_faults.hpp"
#include "support/poll.hpp"

namespace dlock::test {
namespace {

// Another client deletes a holder's entry row (a DELETE by hand, a clean-up script): the next
// contender is granted at once. The holder heard of it only at its release, seconds or hours
// later (as on Redis, ZooKeeper, etcd and SQLite before; their fault trials let `dlock run` run
// CMD on); each renewal now checks the session's own entries and ends the session when one is
// gone. Releases racing that check are no such news: many short holds under a fast renewal
// keep the session live.
TEST_F(sql_faults, a_holder_whose_entry_another_client_deletes_is_told_it_lost) {
  auto& a = admin();
  auto holder = session::open(a.url("dlock", "secret", "ttl=3s"), patient());
  auto lock = name("deleted");
  mutex held(holder, lock);
  held.lock();
  auto hold = held.current_hold();
  ASSERT_EQ(a.entry_rows(lock), 1u);
  a.delete_entries(lock);
  auto other_s = session::open(a.url("dlock", "secret", "ttl=3s"), patient());
  mutex other(other_s, lock);
  ASSERT_TRUE(other.try_lock_for(5s)) << "the deleted entry still held the lock";
  EXPECT_TRUE(poll_until([&] { return hold.state() == hold_state::lost; }, 10s))
      << "the holder whose entry was deleted still believes it holds";
  EXPECT_TRUE(poll_until([&] { return holder.state() == session_state::expired; }, 10s));
  other.unlock();

  // Eight threads share the session's connection, so a renewal's look often queues behind
  // releases of entries it set out to look for.
  auto busy = session::open(a.url("dlock", "secret", "ttl=3s&keepalive=5ms"), patient());
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, lock = name("short")] {
      mutex m(busy, lock);
      try {
        for (int i = 0; i < 150; ++i) {
          m.lock();
          std::this_thread::sleep_for(1ms);
          m.unlock();
        }
      } catch (const dlock::system_error&) {
        // the session ended: the check below says so
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(busy.state(), session_state::live);
}

// A renewal also looks up the session's own entries (the test above). A DBA's lock on the
// entries table (`LOCK TABLE`, a schema change queued behind a long query) makes that look
// wait, while the renewal itself, a write to the sessions table, goes through: the holder
// must keep its hold through the wait, which only delays the look.
TEST_F(sql_faults, a_holder_keeps_its_hold_while_the_entries_table_is_locked) {
  auto& a = admin();
  auto holder = session::open(a.url("dlock", "secret", "ttl=3s"), patient());
  auto lock = name("table-locked");
  mutex held(holder, lock);
  held.lock();
  auto hold = held.current_hold();
  std::vector<hold_state> seen;
  {
    auto locked = a.lock_entries_table();
    auto until = std::chrono::steady_clock::now() + 10s;  // over three TTLs
    while (std::chrono::steady_clock::now() < until) {
      if (auto s = hold.state(); seen.empty() || seen.back() != s) seen.push_back(s);
      std::this_thread::sleep_for(50ms);
    }
  }
  EXPECT_EQ(seen, std::vector<hold_state>{hold_state::held})
      << "the hold changed state while only the entries table was locked";
  EXPECT_EQ(holder.state(), session_state::live);
  EXPECT_EQ(hold.state(), hold_state::held);
  held.unlock();
  // The renewals go on tidying (MySQL: the rows of released entries) with the table free.
  EXPECT_TRUE(poll_until([&] { return a.stored_rows(lock) == 0; }, 5s))
      << a.stored_rows(lock) << " rows of released entries stayed in a session that renews";
  EXPECT_EQ(holder.state(), session_state::live);
}

// A role's idle_session_timeout (PostgreSQL >= 14) below the renewal interval ended the
// session's connection between renewals, and with it every hold, again and again. The
// connections of a lease-mode session must outlast the gaps between its requests. The TTL's
// renewal interval (TTL/3, 2 s) is twice the role's timeout.
TEST_F(sql_faults, a_short_idle_timeout_of_the_role_does_not_end_its_sessions) {
  auto& a = admin();
  a.create_user("idler", "pw_idle");
  if (!a.end_idle_connections_of("idler", 1)) GTEST_SKIP() << "no idle timeout per user";
  auto holder = session::open(a.url("idler", "pw_idle", "ttl=6s"), patient());
  auto lock = name("idle-role");
  mutex held(holder, lock);
  held.lock();
  auto hold = held.current_hold();
  std::this_thread::sleep_for(5s);
  EXPECT_EQ(hold.state(), hold_state::held) << "the server ended the idle holder's connection";
  EXPECT_EQ(holder.state(), session_state::live);
  auto other_s = session::open(a.url("idler", "pw_idle", "ttl=6s"), patient());
  mutex other(other_s, lock);
  ASSERT_FALSE(other.try_lock()) << "the lock is free while its holder holds it";
  std::error_code ec;
  held.unlock(ec);
  EXPECT_FALSE(ec) << ec.message();
  EXPECT_TRUE(other.try_lock_for(5s));
  other.unlock();
}

// A holder is told only that its hold was lost; why is logged first, in the server's words
// where it gave any (PostgreSQL sends a FATAL before it closes: an operator's kill, or a
// setting such as idle_session_timeout). MariaDB's KILL closes without a word, and that is
// said (its loss was logged with no reason at all).
TEST_F(sql_faults, the_servers_reason_for_ending_a_holders_connection_is_logged) {
  auto& a = admin();
  const bool pg = a.url("u", "p").starts_with("postgres");
  struct errors final : observer {
    std::mutex mu;
    std::vector<std::string> seen;
    void on_log(log_level level, std::string_view message) override {
      std::lock_guard lk(mu);
      if (level == log_level::error) seen.emplace_back(message);
    }
  };
  auto log = std::make_shared<errors>();
  auto options = patient();
  options.observer = log;
  a.create_user("holder_r", "pw_r");
  auto holder = session::open(a.url("holder_r", "pw_r", "ttl=60s"), options);
  mutex h(holder, name("reason"));
  h.lock();
  auto hold = h.current_hold();
  EXPECT_GE(a.kill_connections("holder_r"), 1);
  ASSERT_TRUE(poll_until([&] { return !hold.is_held(); }, 20s));
  std::lock_guard lk(log->mu);
  ASSERT_FALSE(log->seen.empty()) << "nothing logged";
  EXPECT_NE(log->seen.front().find(pg ? "terminating connection due to administrator command"
                                      : "connection: closed, with no error sent"),
            std::string::npos)
      << log->seen.front();
}

}  // namespace
}  // namespace dlock::test
