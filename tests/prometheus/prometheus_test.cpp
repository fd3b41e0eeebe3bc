// libdlock-prometheus (include/dlock/prometheus.hpp): real sessions on memory:// and sqlite://
// acquire, time out, release and lose locks; the registry's text exposition must count exactly
// that, and pass `promtool check metrics` (Debian's prometheus package) without a lint.
#include <sqlite3.h>

#include "backends/memory/memory_backend.hpp"
#include "prometheus/prometheus_support.hpp"

namespace dlock::test {
namespace {

void expire_sqlite_session(const std::string& path, const std::string& id) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  sqlite3_busy_timeout(db, 5000);
  auto sql = "UPDATE dlock_sessions SET expires_boot_ms = 0 WHERE id = '" + id + "'";
  EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);
}

TEST(prometheus, counts_what_sessions_on_memory_and_sqlite_do_and_passes_promtool) {
  auto registry = std::make_shared<prometheus::Registry>();
  dlock::prometheus_metrics metrics(registry, {.lock_labels = {"labelled"}});

  const auto store = "prom-" + random_suffix();
  run_story("memory://" + store + "?ttl=2s", "memory", metrics, *registry,
            [&](const dlock::session& s) { dlock::detail::expire_memory_session(store, s.id()); });
  temp_dir dir("dlock-prom");
  const auto db = dir.path() + "/locks.db";
  run_story("sqlite://" + db + "?ttl=1s", "sqlite", metrics, *registry,
            [&](const dlock::session& s) { expire_sqlite_session(db, s.id()); });

  // Both backends' series side by side, each counted apart.
  scrape s(*registry);
  EXPECT_EQ(s("dlock_acquire_total", {{"backend", "memory"}, {"result", "granted"}}), 1);
  EXPECT_EQ(s("dlock_acquire_total", {{"backend", "sqlite"}, {"result", "granted"}}), 1);
  EXPECT_EQ(promtool_problems(s.text), "") << s.text;
  // promtool did run, and lints: a counter without _total (and without help) is reported.
  EXPECT_NE(promtool_problems("# TYPE dlock_bad counter\ndlock_bad 1\n"), "");

  // Once a session's observer is gone, its session is no longer counted in any state.
  EXPECT_TRUE(poll_until([&] {
    scrape t(*registry);
    return t("dlock_session_state", {{"backend", "memory"}, {"state", "expired"}}) == 0 &&
           t("dlock_session_state", {{"backend", "sqlite"}, {"state", "expired"}}) == 0;
  })) << scrape(*registry).text;
}

// Observers are called from many threads at once: contended grants on one memory:// lock, each
// thread with its own session (and observer), add up exactly.
TEST(prometheus, concurrent_sessions_add_up) {
  auto registry = std::make_shared<prometheus::Registry>();
  dlock::prometheus_metrics metrics(registry, {.lock_labels = {"shared-counter"}});
  const auto url = "memory://prom-" + random_suffix();
  constexpr int threads = 4, rounds = 25;
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t) {
    ts.emplace_back([&] {
      auto s = dlock::session::open(url, {.observer = metrics.observer_for(url)});
      dlock::mutex m(s, "shared-counter");
      for (int i = 0; i < rounds; ++i) {
        m.lock();
        m.unlock();
      }
    });
  }
  for (auto& t : ts) t.join();
  scrape s(*registry);
  const std::map<std::string, std::string> lab{{"backend", "memory"}, {"lock", "shared-counter"}};
  auto granted = lab;
  granted["result"] = "granted";
  EXPECT_EQ(s("dlock_acquire_total", granted), threads * rounds) << s.text;
  EXPECT_EQ(s("dlock_acquire_wait_seconds_count", granted), threads * rounds);
  EXPECT_EQ(s("dlock_hold_seconds_count", lab), threads * rounds);
  EXPECT_EQ(s("dlock_holds", lab), 0);
}

// A loss the session reported is counted once, not again when the release finds it gone; a
// release that finds a hold gone unannounced is a loss of its own.
TEST(prometheus, a_loss_is_counted_once_by_its_reason) {
  auto registry = std::make_shared<prometheus::Registry>();
  dlock::prometheus_metrics metrics(registry);
  auto o = metrics.observer_for("redis://secret@host:6379");
  auto lost = dlock::make_error_code(dlock::errc::lock_lost);
  o->on_acquire({.lock = "a", .token = {7}});
  o->on_hold_state("a", {7}, dlock::hold_state::lost);
  o->on_release({.lock = "a", .token = {7}, .error = lost});
  o->on_acquire({.lock = "b", .token = {8}});
  o->on_release({.lock = "b", .token = {8}, .error = lost});
  o->on_request({.operation = "renew", .latency = 3ms, .error = lost});
  scrape s(*registry);
  EXPECT_EQ(s("dlock_lost_total", {{"backend", "redis"}, {"reason", "session_expired"}}), 1);
  EXPECT_EQ(s("dlock_lost_total", {{"backend", "redis"}, {"reason", "found_at_release"}}), 1);
  EXPECT_EQ(s("dlock_holds", {{"backend", "redis"}}), 0);
  EXPECT_EQ(
      s("dlock_backend_request_failures_total", {{"backend", "redis"}, {"operation", "renew"}}), 1);
  EXPECT_EQ(s.text.find("secret"), std::string::npos) << "only the URL's scheme is a label";
  EXPECT_EQ(promtool_problems(s.text), "") << s.text;
}

TEST(prometheus, bad_arguments_are_invalid_argument) {
  auto expect_invalid = [](auto f) {
    try {
      f();
      ADD_FAILURE() << "no exception";
    } catch (const dlock::system_error& e) {
      EXPECT_EQ(e.code(), dlock::errc::invalid_argument) << e.what();
    }
  };
  expect_invalid([] { dlock::prometheus_metrics m(nullptr); });
  auto r = std::make_shared<prometheus::Registry>();
  expect_invalid([&] { dlock::prometheus_metrics m(r, {.lock_labels = {""}}); });
  dlock::prometheus_metrics m(r);
  expect_invalid([&] { (void)m.observer_for("/var/lib/locks.db"); });
  expect_invalid([&] { (void)m.observer_for("Redis://h"); });
  // A second prometheus_metrics on the same registry shares its families.
  EXPECT_NO_THROW(dlock::prometheus_metrics(r, {}));
}

}  // namespace
}  // namespace dlock::test
