#pragma once
// One acquisition's shared state: token, lease deadline and loss signal.

#include <atomic>
#include <dlock/hold.hpp>
#include <functional>
#include <memory>
#include <mutex>
#include <stop_token>
#include <string>
#include <vector>

#include "core/backend.hpp"

namespace dlock::detail {

class session_core;

class hold_core {
 public:
  hold_core(std::shared_ptr<session_core> session, std::string name, std::string entry_id,
            std::uint64_t token);

  const std::string& name() const noexcept { return name_; }
  const std::string& entry_id() const noexcept { return entry_id_; }
  fencing_token token() const noexcept { return token_; }
  hold_state state() const noexcept { return state_.load(); }
  steady::time_point valid_until() const noexcept;
  bool is_held() const noexcept;

  std::stop_token lost_token() const noexcept { return lost_.get_token(); }
  std::stop_token suspect_token() const noexcept { return suspect_.get_token(); }

  // Moves to `s`. lost and released are terminal; held <-> suspect may alternate.
  void set_state(hold_state s);
  void add_callback(std::function<void(hold_state)> cb);

 private:
  std::shared_ptr<session_core> session_;
  std::string name_;
  std::string entry_id_;
  fencing_token token_;
  std::atomic<hold_state> state_{hold_state::held};
  std::stop_source lost_;
  std::stop_source suspect_;
  std::mutex mu_;
  std::vector<std::function<void(hold_state)>> callbacks_;
};

}  // namespace dlock::detail
