#pragma once
// Requests per release through a queue of waiters (issue 17): `waiters` contenders queue
// behind a holder (spread over `sessions` sessions), each releasing as soon as it is granted;
// `requests()` (a server-side counter, or an observer's) is read once every waiter is queued
// and settled, and again after the last release. A handoff that costs O(1) requests gives the
// same figure for 10 waiters as for 100.

#include <atomic>
#include <chrono>
#include <dlock/dlock.hpp>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "support/poll.hpp"

namespace dlock::test {

// Reads the counter until two reads `settle` apart differ by at most `own` (what one read
// itself adds, e.g. a Redis INFO), so that the waiters' own setup (watches, subscriptions)
// is behind the first reading. Gives up settling after 10 s (the caller's ratio then shows it).
inline double settled(const std::function<double()>& requests, double own,
                      std::chrono::milliseconds settle = std::chrono::milliseconds{300}) {
  double last = requests();
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds{10};
  while (std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(settle);
    double now = requests();
    if (now - last <= own) return now;
    last = now;
  }
  return last;
}

// What the waiters contend for: a lock, or a permit of a semaphore whose every permit the
// holder takes first. Each call returns the release of what it took (null: not granted).
struct contended_recipe {
  using release_fn = std::function<void()>;
  std::function<release_fn(session&, const std::string&)> hold_all;
  std::function<release_fn(session&, const std::string&)> take_one;

  static contended_recipe lock() {
    auto take = [](session& s, const std::string& name, bool wait) -> release_fn {
      auto m = std::make_shared<mutex>(s, name);
      if (!wait) {
        m->lock();
      } else if (!m->try_lock_for(std::chrono::seconds{120})) {
        return nullptr;
      }
      return [m] { m->unlock(); };
    };
    return {[=](session& s, const std::string& n) { return take(s, n, false); },
            [=](session& s, const std::string& n) { return take(s, n, true); }};
  }
  static contended_recipe permits(std::uint32_t n) {
    return {[n](session& s, const std::string& name) -> release_fn {
              semaphore sem(s, name, n);
              auto all = std::make_shared<std::vector<permit>>();
              for (std::uint32_t i = 0; i < n; ++i) {
                all->push_back(sem.try_acquire_for(std::chrono::seconds{10}));
                if (!all->back()) throw std::runtime_error("a permit of the holder not granted");
              }
              return [all] { all->clear(); };
            },
            [n](session& s, const std::string& name) -> release_fn {
              semaphore sem(s, name, n);
              auto p = std::make_shared<permit>(sem.try_acquire_for(std::chrono::seconds{120}));
              if (!*p) return nullptr;
              return [p] { p->release(); };
            }};
  }
};

// Each grantee holds for `hold` before it releases (so that the last ones wait a while); the
// first reading waits for the counter to move by at most `quiet` per settle interval (default
// `own`: nothing but the reads themselves; more where waiters poll now and then).
inline double requests_per_release(const std::string& url, const std::string& lock, int waiters,
                                   int sessions, const std::function<double()>& requests,
                                   double own = 0, const session_options& options = {},
                                   std::chrono::milliseconds hold = {},
                                   std::optional<double> quiet = std::nullopt,
                                   const contended_recipe& recipe = contended_recipe::lock()) {
  auto holder_session = session::open(url, options);
  auto release_holder = recipe.hold_all(holder_session, lock);
  const auto places = inspect(holder_session, lock).size();  // the holder's entries
  std::vector<session> ss;
  for (int i = 0; i < sessions; ++i) ss.push_back(session::open(url, options));
  std::atomic<int> granted{0};
  std::vector<std::jthread> threads;
  for (int i = 0; i < waiters; ++i) {
    threads.emplace_back([&, i] {
      if (auto release = recipe.take_one(ss[static_cast<std::size_t>(i % sessions)], lock)) {
        ++granted;
        if (hold.count() > 0) std::this_thread::sleep_for(hold);
        release();
      }
    });
  }
  auto queued = [&] {
    return inspect(holder_session, lock).size() >= static_cast<std::size_t>(waiters) + places;
  };
  if (!poll_until(queued, std::chrono::seconds{60}, std::chrono::milliseconds{20})) {
    throw std::runtime_error("waiters not queued");
  }
  const double before = settled(requests, quiet.value_or(own));
  release_holder();
  threads.clear();  // joins: every waiter was granted and released, or timed out
  const double after = requests() - own;
  if (granted != waiters) throw std::runtime_error("not every waiter was granted");
  return (after - before) / (static_cast<double>(waiters) + static_cast<double>(places));
}

}  // namespace dlock::test
