#pragma once
// Push wake-ups between processes of one host that share a SQLite file, so a waiter is
// woken by the release instead of by its next poll. A waiter binds an abstract Unix datagram
// socket named after the database file and the entry it waits for; whoever removes that
// entry sends one datagram to that name. Only the waiters of that entry wake (no herd).
// Abstract sockets are per network namespace: across namespaces the poll still works.

#include <chrono>
#include <span>
#include <stop_token>
#include <string>
#include <string_view>

namespace dlock::detail {

class local_wake {
 public:
  // Names are scoped by the database file's device and inode.
  explicit local_wake(const std::string& db_path);
  ~local_wake();
  local_wake(const local_wake&) = delete;
  local_wake& operator=(const local_wake&) = delete;

  // Wakes every waiter of `entry_id` (best effort; nobody listening is fine).
  void notify(std::string_view entry_id) const;

  class listener {
   public:
    listener() = default;
    listener(listener&& o) noexcept : fd_(o.fd_), self_(std::move(o.self_)) { o.fd_ = -1; }
    listener(const listener&) = delete;
    ~listener();
    // Waits up to `timeout` for a wake-up or `stop`; true when woken (or stopped).
    bool wait(std::chrono::milliseconds timeout, std::stop_token stop);
    bool bound() const noexcept { return fd_ >= 0; }
    // Waits up to `timeout` for a wake-up of any of `ls` (unbound ones are skipped) or for
    // `stop`; true when woken (or stopped). With none bound it naps for `timeout` (or until
    // `stop`) and returns false: the caller's poll is then the only way to notice.
    static bool wait_any(std::span<listener> ls, std::chrono::milliseconds timeout,
                         std::stop_token stop);

   private:
    friend class local_wake;
    int fd_{-1};
    std::string self_;  // our abstract address, so a stop request can wake us
  };

  // Starts listening for `entry_id` before the caller re-checks the queue (no lost wake-up).
  listener listen(std::string_view entry_id) const;

  // The same for any change of lock `name`'s queue or values (election observers): a
  // hash of the name stands for it, as a name may be longer than a socket address.
  void notify_changed(std::string_view lock) const { notify(changed_key(lock)); }
  listener listen_changed(std::string_view lock) const { return listen(changed_key(lock)); }

 private:
  std::string address(std::string_view entry_id, int slot) const;
  static std::string changed_key(std::string_view lock);
  std::string scope_;
  // One sending socket for the session's life: a wake-up nobody listens for (the common case)
  // then costs one refused sendto, not a socket's creation and close besides.
  int send_fd_{-1};
};

}  // namespace dlock::detail
