#pragma once
// The engine's session: owns the backend session and the lease. A renewal thread calls
// keep_alive() every keepalive interval; a monitor thread declares the lease lost at the
// deadline even if the renewal thread is stuck in a call that hangs. Every hold of the
// session learns each state change from here.

#include <atomic>
#include <condition_variable>
#include <dlock/hold.hpp>
#include <dlock/session.hpp>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <stop_token>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/backend.hpp"
#include "core/url.hpp"

namespace dlock::detail {

class hold_core;

class session_core {
 public:
  static result<std::shared_ptr<session_core>> open(std::string_view url,
                                                    const session_options& options);
  ~session_core();
  session_core(const session_core&) = delete;
  session_core& operator=(const session_core&) = delete;

  backend_session& backend() noexcept { return *backend_; }
  const session_info& info() const noexcept { return info_; }
  const session_options& options() const noexcept { return options_; }
  const std::string& redacted_url() const noexcept { return url_.redacted; }
  session_state state() const noexcept { return state_.load(); }

  // A fresh entry id: the session id and a counter, unique per attempt.
  std::string next_entry_id();

  // The lease deadline implied by a request sent at `sent` (TTL minus drift allowance).
  steady::time_point deadline_from(steady::time_point sent) const noexcept;
  // The session lease's current deadline (from the last successful renewal).
  steady::time_point lease_deadline() const noexcept;

  // Stop requested when the session expires or is closed; waiters watch it.
  std::stop_token ended_token() const noexcept { return ended_.get_token(); }
  // errc::session_expired or errc::session_closed, for a session that has ended.
  failure ended_failure() const;

  void add_hold(const std::shared_ptr<hold_core>& h);
  void remove_hold(const hold_core* h);

  std::size_t add_state_callback(std::function<void(session_state)> cb);
  void remove_state_callback(std::size_t key);

  // An entry whose removal failed on a transient error (the server was down longer than the
  // retry budget): retried after each successful renewal while the session lives, since the
  // entry would otherwise block its lock for as long as the session does.
  void defer_removal(std::string lock, std::string entry_id);

  void close() noexcept;

 private:
  session_core(url u, session_options o, session_info info);
  void start();
  void renew_loop(std::stop_token stop);
  void monitor_loop(std::stop_token stop);
  void on_renewal(steady::time_point sent);
  void on_suspect();
  void expire();
  void set_state(session_state s);
  void notify_holds(hold_state s);

  url url_;
  session_options options_;
  session_info info_;
  std::unique_ptr<backend_session> backend_;
  std::chrono::milliseconds interval_{};

  std::atomic<session_state> state_{session_state::live};
  std::atomic<steady::rep> lease_deadline_{0};
  std::atomic<std::uint64_t> entry_counter_{0};
  std::stop_source ended_;

  void retry_removals();
  std::mutex removals_mu_;                                     // guards removals_
  std::vector<std::pair<std::string, std::string>> removals_;  // (lock, entry id)
  std::mutex mu_;  // guards holds_, callbacks_; also the monitor's wake-ups
  std::condition_variable_any wake_;
  // Keyed by address so that adding and removing one of 100 000 holds is O(1).
  std::unordered_map<const hold_core*, std::weak_ptr<hold_core>> holds_;
  std::map<std::size_t, std::function<void(session_state)>> callbacks_;
  std::size_t next_callback_{1};
  std::mutex close_mu_;
  bool closed_{false};

  std::jthread renewer_;
  std::jthread monitor_;
};

}  // namespace dlock::detail
