// Events (observer.hpp): what a session's observer is told, written once for every backend.
#include <dlock/dlock.hpp>
#include <mutex>
#include <thread>

#include "conformance/suite.hpp"

namespace dlock::test {
namespace {

// Keeps a copy of every event, in order.
class recording_observer : public dlock::observer {
 public:
  struct acquired {
    std::string lock;
    std::error_code error;
    std::uint64_t token;
    bool reentered;
  };
  struct released {
    std::string lock;
    std::error_code error;
    std::uint64_t token;
    std::chrono::nanoseconds held;
  };
  void on_acquire(const dlock::acquire_event& e) override {
    std::lock_guard lk(mu_);
    acquires_.push_back({std::string(e.lock), e.error, e.token.value, e.reentered});
  }
  void on_release(const dlock::release_event& e) override {
    std::lock_guard lk(mu_);
    releases_.push_back({std::string(e.lock), e.error, e.token.value, e.held});
  }
  void on_hold_state(std::string_view lock, dlock::fencing_token token,
                     dlock::hold_state s) override {
    std::lock_guard lk(mu_);
    holds_.push_back(std::string(lock) + " " + std::to_string(token.value) + " " + to_string(s));
  }
  void on_session_state(dlock::session_state s) override {
    std::lock_guard lk(mu_);
    sessions_.push_back(to_string(s));
  }
  void on_wakeup(std::string_view lock, dlock::wakeup_kind k) override {
    std::lock_guard lk(mu_);
    wakeups_.push_back(std::string(lock) + " " + to_string(k));
  }
  void on_request(const dlock::request_event& e) override {
    std::lock_guard lk(mu_);
    requests_.push_back(std::string(e.operation) + (e.error ? " failed" : ""));
    if (e.latency.count() < 0) negative_latency_ = true;
  }

  template <class F>
  auto with(F f) {
    std::lock_guard lk(mu_);
    return f(*this);
  }

  std::mutex mu_;
  std::vector<acquired> acquires_;
  std::vector<released> releases_;
  std::vector<std::string> holds_, sessions_, wakeups_, requests_;
  bool negative_latency_{false};
};

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

}  // namespace

TEST_P(conformance, an_observer_is_told_of_acquires_releases_wakeups_requests_and_a_loss) {
  auto obs = std::make_shared<recording_observer>();
  auto a = dlock::session::open(fx().url(), {.observer = obs});
  auto b = open();
  const auto name = lock_name();
  dlock::mutex mine(a, name);
  dlock::mutex other(b, name);
  other.lock();
  EXPECT_FALSE(mine.try_lock());
  std::thread release_later([&] {
    std::this_thread::sleep_for(100ms);
    other.unlock();
  });
  mine.lock();
  release_later.join();
  const auto token = mine.token().value;
  mine.unlock();

  obs->with([&](recording_observer& o) {
    ASSERT_EQ(o.acquires_.size(), 2u);
    EXPECT_EQ(o.acquires_[0].lock, name);
    EXPECT_EQ(o.acquires_[0].error, dlock::errc::would_block);
    EXPECT_EQ(o.acquires_[0].token, 0u);
    EXPECT_FALSE(o.acquires_[1].error) << o.acquires_[1].error.message();
    EXPECT_EQ(o.acquires_[1].token, token);
    ASSERT_EQ(o.releases_.size(), 1u);
    EXPECT_FALSE(o.releases_[0].error) << o.releases_[0].error.message();
    EXPECT_EQ(o.releases_[0].token, token);
    EXPECT_GE(o.releases_[0].held.count(), 0);
    EXPECT_TRUE(contains(o.wakeups_, name + " changed")) << ::testing::PrintToString(o.wakeups_);
    EXPECT_TRUE(contains(o.requests_, "enqueue")) << ::testing::PrintToString(o.requests_);
    EXPECT_FALSE(o.negative_latency_);
  });

  // The loss of a hold and the end of the session reach the observer too.
  mine.lock();
  const auto lost_token = mine.token().value;
  fx().expire(a);
  ASSERT_TRUE(
      poll_until([&] { return a.state() == dlock::session_state::expired; }, fx().ttl() * 3));
  EXPECT_TRUE(poll_until([&] {
    return obs->with([&](recording_observer& o) {
      return contains(o.holds_, name + " " + std::to_string(lost_token) + " lost") &&
             contains(o.sessions_, "expired");
    });
  })) << ::testing::PrintToString(obs->holds_)
      << ::testing::PrintToString(obs->sessions_);
  std::error_code ec;
  mine.unlock(ec);
  obs->with([&](recording_observer& o) {
    ASSERT_EQ(o.releases_.size(), 2u);
    EXPECT_EQ(o.releases_[1].error, dlock::errc::lock_lost);
  });
}

TEST_P(conformance, a_recursive_reentry_is_reported_as_such) {
  auto obs = std::make_shared<recording_observer>();
  auto a = dlock::session::open(fx().url(), {.observer = obs});
  dlock::recursive_mutex m(a, lock_name());
  m.lock();
  m.lock();
  m.unlock();
  m.unlock();
  obs->with([&](recording_observer& o) {
    ASSERT_EQ(o.acquires_.size(), 2u);
    EXPECT_FALSE(o.acquires_[0].reentered);
    EXPECT_TRUE(o.acquires_[1].reentered);
    EXPECT_EQ(o.releases_.size(), 1u);  // one hold, released once
  });
}

}  // namespace dlock::test
