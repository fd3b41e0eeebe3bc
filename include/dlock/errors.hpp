#pragma once
/// @file errors.hpp
/// dlock's error currency: one std::error_code category with named codes and portable
/// conditions, and the exception the throwing members raise.
///
/// Failures throw dlock::system_error (a std::system_error). The calls a program makes on its
/// hot path also have a second shape, like std::filesystem, that takes `std::error_code&` and
/// is noexcept: session::open, the lock types' lock/try_lock/try_lock_until and unlocks,
/// semaphore::try_acquire_until, permit::release, election::campaign, leadership::resign,
/// multi_lock::unlock. The rest (constructors, multi_lock's acquires, the other semaphore and
/// election members, inspect, list_locks, force_unlock) throw only. `unlock()` never throws:
/// the lease is the backstop when a release cannot reach the server.

#if __cplusplus < 202002L
#error "dlock needs C++20 or later: compile with -std=c++20 (or a later standard)"
#endif

#include <memory>
#include <string>
#include <system_error>

namespace dlock {

/// Error codes of the dlock category. Values are stable (they may be logged and compared).
enum class errc {
  timed_out = 1,    ///< the acquire deadline passed before the lock was granted
  would_block,      ///< try_lock found the lock held by someone else
  cancelled,        ///< the caller's std::stop_token was triggered during a wait
  session_expired,  ///< the session's lease ended; nothing it held is held any more
  session_closed,   ///< the session was closed by its owner
  lock_lost,        ///< the hold ended while it was held: its lease lapsed (or may have), or the
                    ///< server or an operator (force_unlock) ended its session
  not_held,         ///< unlock by a handle that does not hold the lock
  already_held,     ///< a non-reentrant handle asked for a lock it already holds
  upgrade_refused,  ///< a shared holder asked for exclusive access (would deadlock)
  backend_unavailable,  ///< the server cannot be reached; retried, then reported
  backend_error,        ///< the server answered with an error that cannot be retried
  protocol_error,       ///< the server's reply was not what the backend protocol expects
  permission_denied,    ///< authentication or an ACL refused the request
  invalid_argument,     ///< a malformed URL, lock name, duration or option
  unsupported,          ///< the backend or URL scheme does not provide this
};

/// Portable groups of codes, for `ec == dlock::condition::retryable` style tests.
enum class condition {
  retryable = 1,   ///< trying again later may succeed (backend_unavailable, timed_out, would_block)
  ownership_lost,  ///< the caller no longer holds what it held (session_expired, lock_lost, closed)
  misuse,  ///< a bug in the caller (not_held, already_held, upgrade_refused, invalid_argument)
};

/// The dlock error category; its name() is "dlock".
const std::error_category& category() noexcept;

/// The category of dlock::condition.
const std::error_category& condition_category() noexcept;

std::error_code make_error_code(errc e) noexcept;
std::error_condition make_error_condition(condition c) noexcept;

/// The exception thrown by the throwing members. what() names the operation, the lock or URL
/// concerned and, where the backend said more, the backend's own message.
class system_error : public std::system_error {
 public:
  /// `what` is the whole message (the operation, the lock or URL, the cause); unlike
  /// std::system_error, the code's own text is not appended again ("lock name is empty", not
  /// "lock name is empty: invalid argument"). Empty `what`: the code's text.
  system_error(std::error_code ec, const std::string& what)
      : std::system_error(ec, what),
        what_(std::make_shared<const std::string>(what.empty() ? ec.message() : what)) {}
  explicit system_error(std::error_code ec) : system_error(ec, std::string{}) {}
  /// The message, without the code's text repeated.
  const char* what() const noexcept override { return what_->c_str(); }

 private:
  std::shared_ptr<const std::string> what_;  // shared: copying an exception must not throw
};

/// The detailed message of the last error a `std::error_code&` overload reported on the
/// calling thread: what the throwing overload would have put in what() (the operation, the
/// lock or URL concerned, the backend's own words; never a password). Empty until a call
/// fails on this thread; a later failing call replaces it, a succeeding one leaves it as is.
/// Thread-local, so it needs no locking; errno-style.
std::string last_error_message();

}  // namespace dlock

template <>
struct std::is_error_code_enum<dlock::errc> : std::true_type {};
template <>
struct std::is_error_condition_enum<dlock::condition> : std::true_type {};
