// Public lock types: the std-shaped members over lock_handle.
#include <dlock/mutex.hpp>
#include <dlock/recursive_mutex.hpp>
#include <dlock/shared_mutex.hpp>

#include "core/hold_core.hpp"
#include "core/lock_handle.hpp"
#include "core/names.hpp"
#include "core/session_core.hpp"
#include "core/url.hpp"

namespace dlock {
namespace detail {
namespace {

std::string context(const lock_handle& h, const char* op) {
  return "dlock: " + std::string(op) + " '" + h.name() + "' on " +
         detail::url_in_text(h.session()->redacted_url());
}

// A moved-from lock object has no handle: its acquires are refused as a misuse (as an empty
// session's are), never a null dereference in the caller's process.
constexpr const char* lock_moved_from = "this lock object was moved from";

bool acquire_or_throw(lock_handle* h, entry_kind kind, steady::time_point deadline,
                      const char* op) {
  if (!h) {
    throw system_error(make_error_code(errc::invalid_argument),
                       "dlock: " + std::string(op) + ": " + lock_moved_from);
  }
  std::error_code ec;
  std::string msg;
  if (h->acquire(kind, deadline, {}, ec, &msg)) return true;
  if (ec == errc::would_block || ec == errc::timed_out) return false;
  raise(failure{ec, msg}, context(*h, op));
}

bool acquire_noexcept(lock_handle* h, entry_kind kind, steady::time_point deadline,
                      std::stop_token stop, std::error_code& ec) noexcept {
  if (!h) {
    ec = make_error_code(errc::invalid_argument);
    remember(failure{ec, lock_moved_from}, "dlock: acquire");
    return false;
  }
  return h->acquire(kind, deadline, std::move(stop), ec);
}

}  // namespace

basic_lock::basic_lock(dlock::session s, std::string_view name, lock_type type) {
  if (!s)
    throw system_error(make_error_code(errc::invalid_argument), "dlock: lock on an empty session");
  if (auto v = validate_lock_name(name); !v) raise(v.error(), "dlock");
  impl_ = std::make_unique<lock_handle>(s.core(), std::string(name), type);
}
basic_lock::basic_lock(basic_lock&& other) noexcept : impl_(std::move(other.impl_)) {
  if (impl_) impl_->handed_over();
}
basic_lock& basic_lock::operator=(basic_lock&& other) noexcept {
  if (this != &other) {
    if (impl_ && impl_->holds()) unlock();
    impl_ = std::move(other.impl_);
    if (impl_) impl_->handed_over();
  }
  return *this;
}
basic_lock::~basic_lock() = default;

void basic_lock::lock() {
  acquire_or_throw(impl_.get(), entry_kind::exclusive, steady::time_point::max(), "lock");
}
void basic_lock::lock(std::error_code& ec) noexcept {
  acquire_noexcept(impl_.get(), entry_kind::exclusive, steady::time_point::max(), {}, ec);
}
bool basic_lock::try_lock() {
  return acquire_or_throw(impl_.get(), entry_kind::exclusive, steady::time_point::min(),
                          "try_lock");
}
bool basic_lock::try_lock(std::error_code& ec) noexcept {
  return acquire_noexcept(impl_.get(), entry_kind::exclusive, steady::time_point::min(), {}, ec);
}
bool basic_lock::try_lock_until(std::chrono::steady_clock::time_point deadline) {
  return acquire_or_throw(impl_.get(), entry_kind::exclusive, deadline, "try_lock_until");
}
bool basic_lock::try_lock_until(std::chrono::steady_clock::time_point deadline,
                                std::stop_token stop, std::error_code& ec) noexcept {
  return acquire_noexcept(impl_.get(), entry_kind::exclusive, deadline, std::move(stop), ec);
}
// A release must name the mode the handle holds in: a mismatch is the caller's bug, kept and
// reported (not_held), never a silent release of the other mode (std::shared_mutex: undefined).
static bool wrong_mode(const detail::lock_handle* h, bool shared, std::error_code& ec) {
  if (!h || !h->holds() || h->holds_shared() == shared) return false;
  ec = make_error_code(errc::not_held);
  detail::remember(detail::failure{ec, "lock '" + h->name() + "' is held " +
                                           (shared ? "exclusively" : "shared") +
                                           " by this handle, and stays held: release it with " +
                                           (shared ? "unlock()" : "unlock_shared()")},
                   "dlock: release");
  return true;
}
void basic_lock::unlock() noexcept {
  std::error_code ec;
  unlock(ec);
}
// The exclusive release: a shared_mutex's shared hold is kept, also through a basic_lock&.
void basic_lock::unlock(std::error_code& ec) noexcept {
  if (impl_) {
    if (!wrong_mode(impl_.get(), false, ec)) impl_->release(ec);
  } else {
    ec = make_error_code(errc::not_held);
    detail::remember(detail::failure{ec, "a moved-from lock holds nothing"}, "dlock: release");
  }
}
bool basic_lock::is_held() const noexcept {
  return impl_ && impl_->current() && impl_->current()->is_held();
}
dlock::hold basic_lock::current_hold() const noexcept {
  return impl_ && impl_->current() ? dlock::hold(impl_->current()) : dlock::hold();
}
fencing_token basic_lock::token() const {
  if (!impl_ || !impl_->current()) {
    throw system_error(make_error_code(errc::not_held), "dlock: token() of a lock not held");
  }
  return impl_->current()->token();
}
const std::string& basic_lock::name() const noexcept {
  static const std::string empty;
  return impl_ ? impl_->name() : empty;
}

}  // namespace detail

dlock::session detail::basic_lock::session() const noexcept {
  return impl_ ? dlock::session(impl_->session()) : dlock::session();
}

mutex::mutex(dlock::session s, std::string_view name)
    : basic_lock(std::move(s), name, detail::lock_type::mutex) {}

recursive_mutex::recursive_mutex(dlock::session s, std::string_view name)
    : basic_lock(std::move(s), name, detail::lock_type::recursive) {}
std::size_t recursive_mutex::hold_count() const noexcept { return impl_ ? impl_->count() : 0; }

shared_mutex::shared_mutex(dlock::session s, std::string_view name)
    : basic_lock(std::move(s), name, detail::lock_type::shared) {}
void shared_mutex::lock_shared() {
  detail::acquire_or_throw(impl_.get(), detail::entry_kind::shared,
                           detail::steady::time_point::max(), "lock_shared");
}
void shared_mutex::lock_shared(std::error_code& ec) noexcept {
  detail::acquire_noexcept(impl_.get(), detail::entry_kind::shared,
                           detail::steady::time_point::max(), {}, ec);
}
bool shared_mutex::try_lock_shared() {
  return detail::acquire_or_throw(impl_.get(), detail::entry_kind::shared,
                                  detail::steady::time_point::min(), "try_lock_shared");
}
bool shared_mutex::try_lock_shared(std::error_code& ec) noexcept {
  return detail::acquire_noexcept(impl_.get(), detail::entry_kind::shared,
                                  detail::steady::time_point::min(), {}, ec);
}
bool shared_mutex::try_lock_shared_until(std::chrono::steady_clock::time_point deadline) {
  return detail::acquire_or_throw(impl_.get(), detail::entry_kind::shared, deadline,
                                  "try_lock_shared_until");
}
bool shared_mutex::try_lock_shared_until(std::chrono::steady_clock::time_point deadline,
                                         std::stop_token stop, std::error_code& ec) noexcept {
  return detail::acquire_noexcept(impl_.get(), detail::entry_kind::shared, deadline,
                                  std::move(stop), ec);
}
void shared_mutex::unlock() noexcept {
  std::error_code ec;
  unlock(ec);
}
void shared_mutex::unlock(std::error_code& ec) noexcept { basic_lock::unlock(ec); }
void shared_mutex::unlock_shared() noexcept {
  std::error_code ec;
  unlock_shared(ec);
}
void shared_mutex::unlock_shared(std::error_code& ec) noexcept {
  if (!impl_) return basic_lock::unlock(ec);  // moved from: not_held
  if (!wrong_mode(impl_.get(), true, ec)) impl_->release(ec);
}
bool shared_mutex::holds_shared() const noexcept { return impl_ && impl_->holds_shared(); }

}  // namespace dlock
