// Declarative use: with_lock and locked.
#include <dlock/dlock.hpp>
#include <stdexcept>

#include "conformance/suite.hpp"

namespace dlock::test {

TEST_P(conformance, with_lock_runs_the_callable_under_the_lock_and_releases_it) {
  auto s = open();
  auto other = open();
  dlock::mutex probe(other, lock_name());
  auto result = dlock::with_lock(s, {.name = lock_name(), .wait = 5s}, [&](const dlock::hold& h) {
    EXPECT_TRUE(h.is_held());
    EXPECT_GT(h.token().value, 0u);
    EXPECT_FALSE(probe.try_lock());
    return 42;
  });
  EXPECT_EQ(result, 42);
  EXPECT_TRUE(probe.try_lock());
  // Held by someone else: the acquire timeout applies and the callable does not run.
  bool ran = false;
  try {
    dlock::with_lock(s, {.name = lock_name(), .wait = 100ms}, [&] { ran = true; });
    ADD_FAILURE() << "with_lock ran while the lock was held elsewhere";
  } catch (const dlock::system_error& e) {
    EXPECT_EQ(e.code(), dlock::errc::timed_out);
  }
  EXPECT_FALSE(ran);
}

TEST_P(conformance, with_lock_releases_when_the_callable_throws) {
  auto s = open();
  EXPECT_THROW(dlock::with_lock(s, {.name = lock_name()}, [] { throw std::runtime_error("boom"); }),
               std::runtime_error);
  dlock::mutex m(s, lock_name());
  EXPECT_TRUE(m.try_lock());
}

TEST_P(conformance, locked_wraps_a_function_so_each_call_runs_under_the_lock) {
  auto s = open();
  auto other = open();
  dlock::mutex probe(other, lock_name());
  int calls = 0;
  auto add = dlock::locked(
      s, {.name = lock_name(), .kind = dlock::lock_kind::recursive, .wait = 5s}, [&](int a, int b) {
        ++calls;
        EXPECT_FALSE(probe.try_lock());
        return a + b;
      });
  EXPECT_EQ(add(2, 3), 5);
  EXPECT_EQ(add(4, 5), 9);
  EXPECT_EQ(calls, 2);
  EXPECT_TRUE(probe.try_lock());
}

TEST_P(conformance, with_lock_can_open_its_own_session_from_a_url) {
  // The fixture's URL carries its own ttl=, so spec.ttl is left out (both, differing, is refused).
  std::uint64_t token = dlock::with_lock(fx().url(), {.name = lock_name(), .wait = 5s},
                                         [](const dlock::hold& h) { return h.token().value; });
  EXPECT_GT(token, 0u);
  EXPECT_EQ(fx().raw_entries(lock_name()), 0u);
}

}  // namespace dlock::test
