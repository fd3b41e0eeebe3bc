#include "core/observed_backend.hpp"

#include "core/events.hpp"

namespace dlock::detail {
namespace {

// Forwards every virtual of backend_session: one left to its default here would silently
// replace the backend's own (observed_backend_test compares the two lists).
class observed_backend final : public backend_session {
 public:
  observed_backend(std::unique_ptr<backend_session> inner, std::shared_ptr<observer> o)
      : inner_(std::move(inner)), observer_(std::move(o)) {}

  capabilities caps() const noexcept override { return inner_->caps(); }
  backend_session& innermost() noexcept override { return inner_->innermost(); }
  std::optional<std::chrono::milliseconds> granted_ttl() const override {
    return inner_->granted_ttl();
  }
  std::string entry_id(std::string_view session_id, std::uint64_t n) const override {
    return inner_->entry_id(session_id, n);
  }
  result<queue_view> enqueue(std::string_view lock, entry_kind kind, std::string_view id) override {
    return timed("enqueue", [&] { return inner_->enqueue(lock, kind, id); });
  }
  result<queue_view> enqueue_mutex(std::string_view lock, std::string_view id) override {
    return timed("enqueue", [&] { return inner_->enqueue_mutex(lock, id); });
  }
  result<queue_view> list(std::string_view lock) override {
    return timed("list", [&] { return inner_->list(lock); });
  }
  result<queue_view> list_for_waiter(std::string_view lock, std::string_view id) override {
    return timed("list", [&] { return inner_->list_for_waiter(lock, id); });
  }
  result<void> remove(std::string_view lock, std::string_view id) override {
    return timed("remove", [&] { return inner_->remove(lock, id); });
  }
  result<void> remove_until(std::string_view lock, std::string_view id,
                            steady::time_point deadline) override {
    return timed("remove", [&] { return inner_->remove_until(lock, id, deadline); });
  }
  bool refusal_is_final(const failure& f) const override { return inner_->refusal_is_final(f); }
  result<void> wait(std::string_view lock, const entry& awaited, steady::time_point deadline,
                    std::stop_token stop) override {
    return timed("wait", [&] { return inner_->wait(lock, awaited, deadline, stop); });
  }
  result<void> wait_any(std::string_view lock, std::span<const entry> awaited,
                        steady::time_point deadline, std::stop_token stop) override {
    return timed("wait", [&] { return inner_->wait_any(lock, awaited, deadline, stop); });
  }
  result<void> wait_change(std::string_view lock, const queue_view& seen,
                           steady::time_point deadline, std::stop_token stop) override {
    return timed("wait_change", [&] { return inner_->wait_change(lock, seen, deadline, stop); });
  }
  result<std::uint64_t> set_value(std::string_view lock, std::string_view id,
                                  std::string_view value) override {
    return timed("set_value", [&] { return inner_->set_value(lock, id, value); });
  }
  result<awaited_fate> wait_knowing(std::string_view lock, const entry& awaited,
                                    steady::time_point deadline, std::stop_token stop) override {
    return timed("wait", [&] { return inner_->wait_knowing(lock, awaited, deadline, stop); });
  }
  result<steady::time_point> keep_alive() override {
    return timed("renew", [&] { return inner_->keep_alive(); });
  }
  void set_event_handler(std::function<void(session_event)> handler) override {
    inner_->set_event_handler(std::move(handler));
  }
  std::string end_reason() const override { return inner_->end_reason(); }
  void on_expired() noexcept override { inner_->on_expired(); }
  void close() noexcept override {
    auto started = steady::now();
    inner_->close();
    report("close", started, {});
  }
  result<std::vector<std::string>> lock_names(std::string_view prefix) override {
    return timed("lock_names", [&] { return inner_->lock_names(prefix); });
  }
  result<std::vector<check_finding>> diagnose() override {
    return timed("diagnose", [&] { return inner_->diagnose(); });
  }
  result<void> end_session(std::string_view session_id) override {
    return timed("end_session", [&] { return inner_->end_session(session_id); });
  }

 private:
  template <class F>
  auto timed(const char* operation, F&& request) -> decltype(request()) {
    auto started = steady::now();
    auto r = request();
    report(operation, started, r ? std::error_code{} : r.error().code);
    return r;
  }
  void report(const char* operation, steady::time_point started, std::error_code ec) noexcept {
    emit(observer_, [&](observer& o) {
      o.on_request({.operation = operation, .latency = steady::now() - started, .error = ec});
    });
  }

  std::unique_ptr<backend_session> inner_;
  std::shared_ptr<observer> observer_;
};

}  // namespace

std::unique_ptr<backend_session> observe_requests(std::unique_ptr<backend_session> inner,
                                                  std::shared_ptr<observer> o) {
  return std::make_unique<observed_backend>(std::move(inner), std::move(o));
}

}  // namespace dlock::detail
