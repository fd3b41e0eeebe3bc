#include "core/hold_core.hpp"

#include "core/session_core.hpp"

namespace dlock::detail {

hold_core::hold_core(std::shared_ptr<session_core> session, std::string name, std::string entry_id,
                     std::uint64_t token)
    : session_(std::move(session)),
      name_(std::move(name)),
      entry_id_(std::move(entry_id)),
      token_{token} {}

steady::time_point hold_core::valid_until() const noexcept {
  // An entry lives exactly as long as its session's lease (the backend contract), so the
  // hold is valid until that lease's deadline as this client knows it.
  return session_->lease_deadline();
}

bool hold_core::is_held() const noexcept {
  // The parent's hold, seen from a forked child: the child holds nothing (a tester's child
  // read true, the one check it would make before writing).
  if (session_->forked()) return false;
  auto s = state_.load();
  return (s == hold_state::held || s == hold_state::suspect) && steady::now() < valid_until();
}

void hold_core::set_state(hold_state s) {
  std::vector<std::function<void(hold_state)>> to_call;
  {
    std::lock_guard lk(mu_);
    auto cur = state_.load();
    if (cur == hold_state::lost || cur == hold_state::released || cur == s) return;
    // Copied before the state moves: out of memory here leaves the hold as it was, for the
    // session to tell again (session_core::retell_end), not moved with no one told.
    to_call = callbacks_;
    state_.store(s);
  }
  // Outside mu_: request_stop() runs the users' std::stop_callbacks on this thread, and one
  // that unlocked, resigned or released the hold came back here and waited on mu_ for ever
  // (a tester's; the process then could not exit).
  if (s != hold_state::held && s != hold_state::released) suspect_.request_stop();
  if (s == hold_state::lost) lost_.request_stop();
  for (auto& cb : to_call) cb(s);
}

void hold_core::add_callback(std::function<void(hold_state)> cb) {
  {
    std::lock_guard lk(mu_);
    auto cur = state_.load();
    if (cur != hold_state::lost && cur != hold_state::released) {
      callbacks_.push_back(std::move(cb));
      return;
    }
  }
  cb(state_.load());
}

}  // namespace dlock::detail
