// PostgreSQL lease mode across a server crash (issue 17): releases and renewals commit without
// waiting for the WAL flush, and so do acquires whose token comes from a block already reserved
// (only reserving a block waits), so a crash may lose any of them. Whatever the crash loses,
// the next grant's fencing token must be higher than every token granted before it, and no
// entry is granted twice.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <dlock/dlock.hpp>
#include <optional>
#include <string>

#include "support/net.hpp"
#include "support/postgres_server.hpp"

namespace dlock::test {
namespace {

using namespace std::chrono_literals;

// The WAL writer writes commits that did not wait for the flush every wal_writer_delay, or
// as soon as a WAL page fills. At 10 s, and without full-page images (which after each
// restart's checkpoint fill pages at once), what a round commits that way is still in the
// server's memory when it crashes, so the crash loses it. (A test server's fsync is off, but
// WAL that reached the kernel survives a killed server.)
postgres_server& server() {
  static postgres_server s;
  static const bool slow_wal_writer = [] {
    s.query("ALTER SYSTEM SET wal_writer_delay = '10s'");
    s.query("ALTER SYSTEM SET full_page_writes = off");
    s.query("SELECT pg_reload_conf()");
    return true;
  }();
  (void)slow_wal_writer;
  return s;
}

// Each round: a session acquires (the first acquire of a round reserves a block of tokens and
// waits for the flush), then acquires and releases a few times more (tokens from that block,
// nothing waits), then holds the lock or releases it, and the server crashes at once
// (pg_ctl stop -m immediate: the WAL buffers are lost, unlike a clean stop). After the restart
// a fresh session must be granted promptly (the old session ended with its connection) with a
// token above every earlier one, the lost ones included.
struct crash_counts {
  int acquires_lost = 0;
  int releases_lost = 0;
};

crash_counts crash_rounds(bool release_before_crash, int rounds) {
  const auto lock = "crash-" + random_suffix();
  std::uint64_t highest = 0;
  crash_counts lost;
  // The previous round's session stays open (its connection dead) until the next grant: its
  // close would otherwise delete a resurrected entry before the grant had to look past it.
  std::optional<session> previous;
  for (int round = 0; round <= rounds; ++round) {
    session s = session::open(server().url("ttl=60s"));
    mutex m(s, lock);
    // The lock is free, or held only by the previous round's dead session.
    if (!m.try_lock_for(20s)) {
      ADD_FAILURE() << "round " << round << ": not granted after the restart";
      return lost;
    }
    auto t = m.token().value;
    EXPECT_GT(t, highest) << "round " << round << ": token not above every earlier one";
    highest = std::max(highest, t);
    if (previous) previous->close();  // must neither hang nor throw
    if (round == rounds) break;
    for (int i = 0; i < 4; ++i) {
      m.unlock();
      m.lock();
      EXPECT_GT(m.token().value, highest) << "round " << round << ", acquire " << i + 2;
      highest = std::max(highest, m.token().value);
    }
    if (release_before_crash) m.unlock();
    server().crash();
    server().start();
    // A release lost leaves an entry; an acquire lost leaves none with the round's last token
    // (the round's first entry may still be there: its acquire waited, its release did not).
    auto left = server().query("SELECT count(*) FROM dlock.entries WHERE name = $1", {lock});
    auto last = server().query("SELECT count(*) FROM dlock.entries WHERE name = $1 AND token = $2",
                               {lock, std::to_string(highest)});
    if (release_before_crash && left.at(0) != "0") ++lost.releases_lost;
    if (!release_before_crash && last.at(0) == "0") ++lost.acquires_lost;
    previous.emplace(std::move(s));
  }
  std::printf("%d crashes (%s before each): %d acquires and %d releases lost, last token %llu\n",
              rounds, release_before_crash ? "released" : "held", lost.acquires_lost,
              lost.releases_lost, static_cast<unsigned long long>(highest));
  return lost;
}

TEST(postgres_crash, a_release_lost_in_a_crash_grants_nothing_twice) {
  auto lost = crash_rounds(true, 6);
  // The crash must have lost what it can lose, or this test tests nothing.
  EXPECT_GT(lost.releases_lost, 0);
}

// The crash loses the held entry and the tokens of the round's last acquires; the next grant
// starts a new block (a crash empties the unlogged fence_hot), above all of them.
TEST(postgres_crash, an_acquire_lost_in_a_crash_repeats_no_token) {
  auto lost = crash_rounds(false, 4);
  EXPECT_GT(lost.acquires_lost, 0);
}

}  // namespace
}  // namespace dlock::test
