// dlock::semaphore and dlock::permit: the counting semaphore over lock_handle (one handle per
// permit, so every permit has its own entry, token and loss signal).
#include <dlock/semaphore.hpp>

#include "core/hold_core.hpp"
#include "core/lock_handle.hpp"
#include "core/names.hpp"
#include "core/session_core.hpp"
#include "core/url.hpp"
#include "core/verdict.hpp"

namespace dlock {

permit::permit() noexcept = default;
permit::permit(std::unique_ptr<detail::lock_handle> h) noexcept : impl_(std::move(h)) {}
permit::permit(permit&&) noexcept = default;
permit& permit::operator=(permit&& other) noexcept {
  if (this != &other) {
    release();
    impl_ = std::move(other.impl_);
  }
  return *this;
}
permit::~permit() = default;  // the handle releases a hold it still has

permit::operator bool() const noexcept { return impl_ && impl_->holds(); }
bool permit::is_held() const noexcept {
  return impl_ && impl_->current() && impl_->current()->is_held();
}
fencing_token permit::token() const {
  if (!*this) throw system_error(make_error_code(errc::not_held), "dlock: token() of no permit");
  return impl_->current()->token();
}
std::chrono::steady_clock::time_point permit::valid_until() const noexcept {
  return *this ? impl_->current()->valid_until() : std::chrono::steady_clock::time_point{};
}
std::stop_token permit::lost_token() const noexcept {
  return *this ? impl_->current()->lost_token() : std::stop_token{};
}
dlock::hold permit::hold() const noexcept {
  return *this ? dlock::hold(impl_->current()) : dlock::hold();
}
std::string permit::name() const { return *this ? impl_->name() : std::string(); }
void permit::release() noexcept {
  std::error_code ec;
  release(ec);
}
void permit::release(std::error_code& ec) noexcept {
  if (!*this) {
    ec = make_error_code(errc::not_held);
    return;
  }
  impl_->release(ec);
  impl_.reset();
}

namespace {
// A moved-from semaphore has no session: acquiring is refused as a misuse, never a null
// dereference in the caller's process.
constexpr const char* semaphore_moved_from = "this semaphore object was moved from";
}  // namespace

semaphore::semaphore(dlock::session s, std::string_view name, std::uint32_t max_permits)
    : session_(std::move(s)), name_(name), max_(max_permits) {
  if (!session_) {
    throw system_error(make_error_code(errc::invalid_argument),
                       "dlock: semaphore on an empty session");
  }
  if (auto v = detail::validate_lock_name(name); !v) detail::raise(v.error(), "dlock");
  if (max_permits < 1 || max_permits > detail::max_permits) {
    throw system_error(make_error_code(errc::invalid_argument),
                       "dlock: semaphore '" + name_ + "': max_permits " +
                           std::to_string(max_permits) + " is not in [1, " +
                           std::to_string(detail::max_permits) + "]");
  }
}

permit semaphore::try_acquire_until(std::chrono::steady_clock::time_point deadline,
                                    std::stop_token stop, std::error_code& ec) noexcept {
  if (!session_) {
    ec = make_error_code(errc::invalid_argument);
    detail::remember(detail::failure{ec, semaphore_moved_from}, "dlock: acquire a permit");
    return permit();
  }
  try {
    auto h = std::make_unique<detail::lock_handle>(session_.core(), name_, detail::lock_type::mutex,
                                                   max_);
    if (!h->acquire(detail::entry_kind::permit, deadline, std::move(stop), ec)) return permit();
    return permit(std::move(h));
  } catch (const std::bad_alloc&) {
    ec = std::make_error_code(std::errc::not_enough_memory);
    return permit();
  }
}

permit semaphore::take(std::chrono::steady_clock::time_point deadline, const char* op) {
  if (!session_) {
    throw system_error(make_error_code(errc::invalid_argument),
                       "dlock: " + std::string(op) + " a permit: " + semaphore_moved_from);
  }
  auto h =
      std::make_unique<detail::lock_handle>(session_.core(), name_, detail::lock_type::mutex, max_);
  std::error_code ec;
  std::string msg;
  if (h->acquire(detail::entry_kind::permit, deadline, {}, ec, &msg)) return permit(std::move(h));
  if (ec == errc::would_block || ec == errc::timed_out) return permit();
  detail::raise(detail::failure{ec, msg}, "dlock: " + std::string(op) + " a permit of '" + name_ +
                                              "' on " + detail::url_in_text(session_.url()));
}

permit semaphore::acquire() {
  return take(std::chrono::steady_clock::time_point::max(), "acquire");
}
permit semaphore::try_acquire() {
  return take(std::chrono::steady_clock::time_point::min(), "try_acquire");
}
permit semaphore::try_acquire_until(std::chrono::steady_clock::time_point deadline) {
  return take(deadline, "try_acquire_until");
}

}  // namespace dlock
