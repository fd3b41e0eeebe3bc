#pragma once
// Removals of a session's entries (releases, abandoned waits) that must not make the caller
// wait on an unreachable server: the first attempt runs on the caller's thread only where it
// cannot hang past the caller's deadline; a few remover threads retry each removal that is
// not done until the entry is gone or the session closes, since an entry left behind blocks
// its lock for as long as the session lives.

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "core/backend.hpp"
#include "core/poll_pacer.hpp"

namespace dlock::detail {

// One entry's removal, shared by the remover threads and a caller that waits for it.
class removal_ticket {
 public:
  // Waits until the removal is settled or `until`; true if settled.
  bool wait_until(steady::time_point until);
  // Settled: the entry is gone (or the session closed, which removes everything).
  bool settled() const;
  // The first attempt found the entry already absent (remove() said lock_lost, or the
  // session's lease had ended): the entry was not ours any more when the caller let it go.
  bool was_absent() const;
  // Settled only because the session's lease ended while retries were still failing: the
  // entry is dead (its lease is over) but its removal was never confirmed.
  bool ended_unconfirmed() const;
  // Settled because the server refused the removal for good (backend_session::
  // refusal_is_final): the entry stays until the session ends; last_error() says why.
  bool refused() const;
  // The last attempt's failure, for the message of an unconfirmed or refused release.
  std::optional<failure> last_error() const;

 private:
  friend class removal_queue;
  void settle(bool absent, bool unconfirmed = false);
  void note(failure f);
  void refuse(failure f);

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool settled_{false};
  bool absent_{false};
  bool unconfirmed_{false};
  bool refused_{false};
  std::optional<failure> last_;
};

// Test hook: removals in this process whose first attempt ran on the caller's thread, and
// removals handed to a remover thread (first attempt there, or a retry after a failed
// inline attempt).
struct removal_counts {
  std::uint64_t inline_attempts{0};
  std::uint64_t handed_off{0};
};
removal_counts removal_stats() noexcept;

class removal_queue {
 public:
  // Told of a removal the server refused for good (backend_session::refusal_is_final), on
  // the thread that saw it, with no lock of the queue held: `caller_deadline` is the time the
  // caller will wait for the ticket (nullopt on a remover thread: nobody waits there).
  using refused_handler =
      std::function<void(const failure&, std::optional<steady::time_point> caller_deadline)>;

  removal_queue(backend_session& backend, refused_handler on_refused)
      : backend_(backend), on_refused_(std::move(on_refused)) {}
  removal_queue(const removal_queue&) = delete;
  removal_queue& operator=(const removal_queue&) = delete;

  // Removes entry `entry_id` of `lock`: the first attempt on the caller's thread when that
  // cannot hang (a same-host store) or can be cut off at `caller_deadline` (a backend with
  // capabilities::bounded_remove; no deadline: the caller will not wait, nothing inline);
  // otherwise, and after a failed first attempt, queued for the remover threads. Every
  // failure that does not prove the entry gone is retried, with capped exponential backoff
  // from a few milliseconds, except a refusal the backend calls final: that settles the
  // ticket as refused and goes to the refused_handler. Throws if no remover thread can be
  // started.
  std::shared_ptr<removal_ticket> submit(std::string lock, std::string entry_id,
                                         std::optional<steady::time_point> caller_deadline);

  // The last removal attempt failed transiently, or a caller gave up waiting for one.
  bool unreachable() const noexcept { return unreachable_hint_; }
  void note_unreachable() noexcept { unreachable_hint_ = true; }

  // Takes no more removals and settles the pending ones: the backend's close removes every
  // entry of the session (best effort; the lease is the backstop). Then join() the threads,
  // each of which may be inside a backend call that waits for request_timeout.
  void close() noexcept;
  void join() noexcept;

 private:
  // Settles `t` where an attempt's answer is final; false when a retry has work left.
  static bool settles(const result<void>& r, removal_ticket& t);
  struct job {
    std::string lock;
    std::string id;
    std::shared_ptr<removal_ticket> ticket;
    int attempt{0};
    steady::time_point next{};
    // Retries start a few ms apart (not at the renewal period), capped low, so a healed
    // link frees the lock at once.
    poll_pacer pace{std::chrono::milliseconds{5}, std::chrono::milliseconds{250}};
  };
  void remover_loop(std::stop_token stop);

  backend_session& backend_;
  refused_handler on_refused_;
  std::mutex mu_;  // guards jobs_, gen_, idle_, closed_, removers_
  std::condition_variable_any cv_;
  std::vector<job> jobs_;
  std::uint64_t gen_{0};  // bumped on every change of jobs_, so a waiting remover rescans
  int idle_{0};
  bool closed_{false};
  std::atomic<bool> unreachable_hint_{false};
  std::vector<std::jthread> removers_;  // last: stopped before what they use is destroyed
};

}  // namespace dlock::detail
