// One session's observer feeding the dlock_* families (prometheus_families.hpp).
#include <dlock/errors.hpp>
#include <dlock/session.hpp>
#include <mutex>
#include <utility>

#include "prometheus/prometheus_families.hpp"

namespace dlock::detail {
namespace {

using prometheus::Labels;

double seconds(std::chrono::nanoseconds d) { return std::chrono::duration<double>(d).count(); }

// Bounded: the errc values an acquire ends with most are named, the rest are "error".
const char* result_of(const std::error_code& ec) {
  if (!ec) return "granted";
  if (ec == errc::timed_out) return "timed_out";
  if (ec == errc::would_block) return "would_block";
  if (ec == errc::cancelled) return "cancelled";
  return "error";
}

constexpr session_state all_states[] = {session_state::live, session_state::suspended,
                                        session_state::expired, session_state::closed};

class prometheus_observer final : public observer {
 public:
  prometheus_observer(std::shared_ptr<prometheus_families> f, std::string backend)
      : f_(std::move(f)), backend_(std::move(backend)) {
    // Every state's series exists from the start (at 0), so a query sees "no suspended
    // sessions" rather than no data; the unlabelled holds gauge likewise.
    for (auto s : all_states) {
      sessions_[static_cast<int>(s)] =
          &f_->sessions.Add({{"backend", backend_}, {"state", to_string(s)}});
    }
    f_->holds.Add({{"backend", backend_}});
    sessions_[static_cast<int>(state_)]->Increment();
  }
  ~prometheus_observer() override { sessions_[static_cast<int>(state_)]->Decrement(); }

  void on_acquire(const acquire_event& e) override {
    if (e.reentered) return;  // a recursive_mutex's re-entry asked nothing of anyone
    auto labels = base(e.lock);
    f_->holds.Add(labels).Increment(e.error ? 0 : 1);
    labels.emplace("result", result_of(e.error));
    f_->acquires.Add(labels).Increment();
    f_->wait.Add(labels, wait_buckets()).Observe(seconds(e.waited));
  }

  void on_release(const release_event& e) override {
    auto labels = base(e.lock);
    f_->holds.Add(labels).Decrement();
    f_->hold.Add(labels, hold_buckets()).Observe(seconds(e.held));
    bool reported;
    {
      std::lock_guard lk(mu_);
      reported = lost_.erase({std::string(e.lock), e.token.value}) > 0;
    }
    // A loss already counted when the session expired is not counted again at its release.
    if (e.error == errc::lock_lost && !reported) {
      labels.emplace("reason", "found_at_release");
      f_->lost.Add(labels).Increment();
    }
  }

  void on_hold_state(std::string_view lock, fencing_token token, hold_state s) override {
    if (s != hold_state::lost) return;
    {
      std::lock_guard lk(mu_);
      lost_.emplace(std::string(lock), token.value);
    }
    // Only an expired session marks its holds lost (session_core::expire).
    auto labels = base(lock);
    labels.emplace("reason", "session_expired");
    f_->lost.Add(labels).Increment();
  }

  void on_session_state(session_state s) override {
    session_state before;
    {
      std::lock_guard lk(mu_);
      before = std::exchange(state_, s);
    }
    if (before == s) return;
    sessions_[static_cast<int>(before)]->Decrement();
    sessions_[static_cast<int>(s)]->Increment();
  }

  void on_request(const request_event& e) override {
    Labels labels{{"backend", backend_}, {"operation", std::string(e.operation)}};
    f_->requests.Add(labels, request_buckets()).Observe(seconds(e.latency));
    if (e.error) f_->request_failures.Add(labels).Increment();
  }

 private:
  Labels base(std::string_view lock) const {
    Labels l{{"backend", backend_}};
    if (f_->lock_labels.contains(lock)) l.emplace("lock", std::string(lock));
    return l;
  }

  std::shared_ptr<prometheus_families> f_;
  std::string backend_;
  prometheus::Gauge* sessions_[std::size(all_states)]{};
  std::mutex mu_;
  session_state state_{session_state::live};
  // Holds reported lost and not yet released: (lock, token).
  std::set<std::pair<std::string, std::uint64_t>> lost_;
};

}  // namespace

std::shared_ptr<observer> make_prometheus_observer(std::shared_ptr<prometheus_families> f,
                                                   std::string backend) {
  return std::make_shared<prometheus_observer>(std::move(f), std::move(backend));
}

}  // namespace dlock::detail
