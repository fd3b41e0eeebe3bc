// Real processes: crashes, pauses past the lease, and a shared counter under contention.
#include <signal.h>

#include <dlock/dlock.hpp>
#include <fstream>
#include <thread>

#include "conformance/suite.hpp"

namespace dlock::test {
TEST_P(conformance, a_killed_holder_is_replaced_within_its_ttl_with_a_larger_token) {
  DLOCK_REQUIRE_MULTI_PROCESS();
  auto w = worker({"hold", fx().url(), lock_name()});
  auto first = token_of(w.wait_for_line("granted", 20s));
  ASSERT_GT(first, 0u);
  w.signal(SIGKILL);
  ASSERT_TRUE(w.wait(5s).has_value());
  auto s = open();
  dlock::mutex m(s, lock_name());
  if (caps().frees_dead_process_at_once) {
    EXPECT_TRUE(m.try_lock()) << "the dead holder's entry was not freed at once";
  }
  if (!m.is_held()) {
    ASSERT_TRUE(m.try_lock_for(fx().ttl() + 1s));
  }
  EXPECT_GT(m.token().value, first);
}

TEST_P(conformance, a_paused_holder_learns_it_lost_the_lock_and_its_late_write_is_refused) {
  DLOCK_REQUIRE_MULTI_PROCESS();
  temp_dir dir;
  auto fence = dir.path() + "/fence";
  auto stale = worker({"hold", fx().url(), lock_name()});
  auto stale_token = token_of(stale.wait_for_line("granted", 20s));
  ASSERT_GT(stale_token, 0u);
  stale.signal(SIGSTOP);
  auto fresh = worker({"hold", fx().url(), lock_name()});
  auto fresh_token = token_of(fresh.wait_for_line("granted", fx().ttl() * 3 + 10s));
  ASSERT_GT(fresh_token, stale_token);
  fresh.write_stdin("fence " + fence + "\n");
  EXPECT_EQ(fresh.read_line(10s).value_or(""), "write accepted");
  stale.signal(SIGCONT);
  EXPECT_TRUE(stale.wait_for_line("lost", 10s).has_value()) << "no loss signal after resuming";
  stale.write_stdin("fence " + fence + "\n");
  EXPECT_EQ(stale.wait_for_line("write", 10s).value_or(""), "write refused");
  stale.write_stdin("held\n");
  EXPECT_EQ(stale.wait_for_line("held", 10s).value_or(""), "held no");
  fresh.write_stdin("held\n");
  EXPECT_EQ(fresh.wait_for_line("held", 10s).value_or(""), "held yes");
}

TEST_P(conformance, eight_processes_incrementing_a_shared_counter_end_exact) {
  DLOCK_REQUIRE_MULTI_PROCESS();
  constexpr int processes = 8;
  constexpr int each = 200;
  temp_dir dir;
  auto counter = dir.path() + "/counter";
  std::ofstream(counter) << 0;
  std::vector<child_process> workers;
  for (int i = 0; i < processes; ++i) {
    workers.push_back(worker({"count", fx().url(), lock_name(), counter, std::to_string(each)}));
  }
  for (auto& w : workers) {
    EXPECT_EQ(w.wait_for_line("done", 300s).value_or("(none)"), "done");
    EXPECT_EQ(w.wait(30s).value_or(-1), 0);
  }
  long value = -1;
  std::ifstream(counter) >> value;
  EXPECT_EQ(value, processes * each);
  EXPECT_EQ(fx().raw_entries(lock_name()), 0u);
}

}  // namespace dlock::test
