// Public dlock::session and dlock::hold: thin wrappers over session_core and hold_core.
#include <dlock/hold.hpp>
#include <dlock/session.hpp>

#include "core/hold_core.hpp"
#include "core/session_core.hpp"

namespace dlock {

const char* to_string(session_state s) noexcept {
  switch (s) {
    case session_state::live:
      return "live";
    case session_state::suspended:
      return "suspended";
    case session_state::expired:
      return "expired";
    case session_state::closed:
      return "closed";
  }
  return "?";
}

const char* to_string(hold_state s) noexcept {
  switch (s) {
    case hold_state::held:
      return "held";
    case hold_state::suspect:
      return "suspect";
    case hold_state::lost:
      return "lost";
    case hold_state::released:
      return "released";
  }
  return "?";
}

session::session() noexcept = default;
session::session(std::shared_ptr<detail::session_core> core) noexcept : core_(std::move(core)) {}

session session::open(std::string_view url, const session_options& options) {
  auto r = detail::session_core::open(url, options);
  if (!r) detail::raise(r.error(), "dlock: cannot open session");
  return session(std::move(*r));
}

session session::open(std::string_view url, const session_options& options,
                      std::error_code& ec) noexcept {
  try {
    auto r = detail::session_core::open(url, options);
    if (!r) {
      ec = r.error().code;
      detail::remember(r.error(), "dlock: cannot open session");
      return {};
    }
    ec.clear();
    return session(std::move(*r));
  } catch (const std::bad_alloc&) {
    ec = std::make_error_code(std::errc::not_enough_memory);
    return {};
  }
}

session_state session::state() const noexcept {
  return core_ ? core_->state() : session_state::closed;
}
std::chrono::milliseconds session::ttl() const noexcept {
  return core_ ? core_->info().ttl : std::chrono::milliseconds{0};
}
std::string session::url() const { return core_ ? core_->redacted_url() : std::string{}; }
std::string session::id() const { return core_ ? core_->info().id : std::string{}; }

backend_capabilities session::capabilities() const noexcept {
  return core_ ? core_->backend().caps() : backend_capabilities{};
}
std::size_t session::on_state_change(std::function<void(session_state)> callback) {
  return core_ ? core_->add_state_callback(std::move(callback)) : 0;
}
void session::remove_state_callback(std::size_t key) noexcept {
  if (core_) core_->remove_state_callback(key);
}
void session::close() noexcept {
  if (core_) core_->close();
}

fencing_token hold::token() const noexcept { return core_ ? core_->token() : fencing_token{}; }
hold_state hold::state() const noexcept { return core_ ? core_->state() : hold_state::released; }
bool hold::is_held() const noexcept { return core_ && core_->is_held(); }
std::chrono::steady_clock::time_point hold::valid_until() const noexcept {
  return core_ ? core_->valid_until() : std::chrono::steady_clock::time_point{};
}
std::stop_token hold::lost_token() const noexcept {
  return core_ ? core_->lost_token() : std::stop_token{};
}
std::stop_token hold::suspect_token() const noexcept {
  return core_ ? core_->suspect_token() : std::stop_token{};
}
const std::string& hold::name() const noexcept {
  static const std::string empty;
  return core_ ? core_->name() : empty;
}
void hold::on_state_change(std::function<void(hold_state)> callback) const {
  if (core_) core_->add_callback(std::move(callback));
}

}  // namespace dlock
