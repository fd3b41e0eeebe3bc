#pragma once
// The engine's session: owns the backend session and the lease. A renewal thread calls
// keep_alive() every keepalive interval; a monitor thread declares the lease lost at the
// deadline even if the renewal thread is stuck in a call that hangs. Every hold of the
// session learns each state change from here. Removals of entries (releases, abandoned
// waits) go to its removal_queue, so a caller waits only as long as
// session_options::release_timeout allows.

#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <dlock/hold.hpp>
#include <dlock/session.hpp>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/backend.hpp"
#include "core/removal_queue.hpp"
#include "core/url.hpp"

namespace dlock::detail {

class hold_core;

class session_core : public std::enable_shared_from_this<session_core> {
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

  // Queue listings made by this session's waiters after a wake-up: what a release costs its
  // waiters (the metrics and the wake-up tests read it).
  void count_wakeup_listing() noexcept { wakeup_listings_.fetch_add(1, std::memory_order_relaxed); }
  std::uint64_t wakeup_listings() const noexcept { return wakeup_listings_.load(); }

  // The lease deadline implied by a request sent at `sent` (TTL minus drift allowance).
  steady::time_point deadline_from(steady::time_point sent) const noexcept;
  // The session lease's current deadline (from the last successful renewal).
  steady::time_point lease_deadline() const noexcept;

  // True in a process forked from the one that opened the session: the session's threads
  // did not come along, and its connections and entries are the parent's. There nothing is
  // sent and nothing closed (a tester's child, destroying its copy of a held lock, released
  // the parent's lock while the parent still believed it held).
  bool forked() const noexcept { return ::getpid() != opened_by_; }
  std::string forked_message() const;

  // Stop requested when the session expires or is closed; waiters watch it.
  std::stop_token ended_token() const noexcept { return ended_.get_token(); }
  // errc::session_expired or errc::session_closed, for a session that has ended.
  failure ended_failure() const;

  void add_hold(const std::shared_ptr<hold_core>& h);
  void remove_hold(const hold_core* h);

  std::size_t add_state_callback(std::function<void(session_state)> cb);
  void remove_state_callback(std::size_t key);

  // Removes this session's entry `entry_id` of `lock` through the session's removal_queue:
  // the first attempt may run on this thread, until at most `caller_deadline` (the time the
  // caller will wait for the ticket; nullopt: it will not wait); see removal_queue::submit.
  std::shared_ptr<removal_ticket> remove_in_background(
      std::string lock, std::string entry_id, std::optional<steady::time_point> caller_deadline);

  // A caller gave up waiting for a removal: close() will not wait on this server either.
  void note_unreachable() noexcept { removals_->note_unreachable(); }
  // The host is exiting (exit_guard): interrupt requests in flight as the lease's end would,
  // and start no more (no renewal, no removal retry, no closing statements).
  void abandon_for_exit() noexcept;

  // Ends the session: holds become released, waiters fail, renewal stops, the backend removes
  // every entry and disconnects. Waits at most options().release_timeout for the backend
  // (not at all when it is already known unreachable); the rest goes on in the background.
  void close() noexcept;

  // The server refused the removal of one of this session's entries for good
  // (backend_session::refusal_is_final): the entry would block its lock for as long as the
  // session lives. Ends the session as expired -- every hold told lost, waiters fail with
  // session_expired naming `why` -- then closes the backend, which makes the server drop the
  // session's entries; waits for that until `wait_until` at most (nullopt: not at all).
  void end_after_refusal(const failure& why, std::optional<steady::time_point> wait_until) noexcept;

 private:
  session_core(url u, session_options o, session_info info);
  static void destroy(session_core* p) noexcept;
  static void run_bounded(std::chrono::milliseconds bound, std::function<void()> job) noexcept;
  void close_within(std::chrono::milliseconds bound) noexcept;
  bool begin_close() noexcept;
  void finish_close() noexcept;
  bool backend_unreachable() noexcept;
  void start();
  void renew_loop(std::stop_token stop);
  bool renew_round(std::stop_token& stop, steady::time_point& next);
  void monitor_loop(std::stop_token stop);
  // Why the lease ran out, as far as the renewals tell; called with why_mu_ held.
  std::string lease_ran_out_why() const;
  void on_renewal(steady::time_point sent);
  void on_suspect();
  void expire();
  // Tells again what expire() could not (out of memory); the monitor calls it until told.
  void retell_end();
  void set_state(session_state s);
  void notify_holds(hold_state s);

  url url_;
  session_options options_;
  session_info info_;
  std::unique_ptr<backend_session> backend_;
  std::chrono::milliseconds interval_{};

  std::atomic<session_state> state_{session_state::live};
  std::atomic<bool> loss_untold_{false};   // expire() could not tell every hold
  std::atomic<bool> state_untold_{false};  // nor the session's state callbacks
  std::atomic<bool> end_done_{false};      // expire() has run to its end
  std::atomic<steady::rep> lease_deadline_{0};
  std::atomic<std::uint64_t> entry_counter_{0};
  std::atomic<std::uint64_t> wakeup_listings_{0};
  std::stop_source ended_;
  mutable std::mutex why_mu_;
  std::string ended_why_;     // why the engine itself ended the session (end_after_refusal)
  std::string renew_failed_;  // the last failed renewal's message, until one succeeds
  // When the renewal under way was sent (steady ticks), 0 between renewals.
  std::atomic<steady::rep> renew_sent_{0};

  // Created with the backend session; destroyed before it (declared after it).
  std::unique_ptr<removal_queue> removals_;
  std::mutex mu_;  // guards holds_, callbacks_; also the monitor's wake-ups
  std::condition_variable_any wake_;
  // Keyed by address so that adding and removing one of 100 000 holds is O(1).
  std::unordered_map<const hold_core*, std::weak_ptr<hold_core>> holds_;
  std::map<std::size_t, std::function<void(session_state)>> callbacks_;
  std::size_t next_callback_{1};
  std::mutex close_mu_;
  bool closed_{false};
  const pid_t opened_by_{::getpid()};

  std::jthread renewer_;
  std::stop_source renewer_stop_;  // renewer_'s, for abandon_for_exit on another thread
  std::jthread monitor_;
};

}  // namespace dlock::detail
