#include <dlock/errors.hpp>

#include "core/result.hpp"

namespace dlock {
namespace {

class dlock_category final : public std::error_category {
 public:
  const char* name() const noexcept override { return "dlock"; }
  std::string message(int ev) const override {
    switch (static_cast<errc>(ev)) {
      case errc::timed_out:
        return "timed out before it was granted (a lock, a permit or leadership)";
      case errc::would_block:
        return "another holder has it (a lock, or every permit)";
      case errc::cancelled:
        return "the wait was cancelled";
      case errc::session_expired:
        return "the session expired";
      case errc::session_closed:
        return "the session is closed";
      case errc::lock_lost:
        return "the lock was lost (its lease ended, or the server or an operator ended its "
               "session)";
      case errc::not_held:
        return "not held by this handle (a lock, a permit or leadership)";
      case errc::already_held:
        return "already held by this handle";
      case errc::upgrade_refused:
        return "a shared holder cannot upgrade to exclusive";
      case errc::backend_unavailable:
        return "the backend is unavailable";
      case errc::backend_error:
        return "the backend reported an error";
      case errc::protocol_error:
        return "unexpected reply from the backend";
      case errc::permission_denied:
        return "permission denied by the backend";
      case errc::invalid_argument:
        return "invalid argument";
      case errc::unsupported:
        return "not supported by this backend";
    }
    return "unknown dlock error";
  }
  std::error_condition default_error_condition(int ev) const noexcept override {
    switch (static_cast<errc>(ev)) {
      case errc::timed_out:
      case errc::would_block:
      case errc::backend_unavailable:
        return condition::retryable;
      case errc::session_expired:
      case errc::session_closed:
      case errc::lock_lost:
        return condition::ownership_lost;
      case errc::not_held:
      case errc::already_held:
      case errc::upgrade_refused:
      case errc::invalid_argument:
        return condition::misuse;
      default:
        return std::error_condition(ev, *this);
    }
  }
};

class dlock_condition_category final : public std::error_category {
 public:
  const char* name() const noexcept override { return "dlock-condition"; }
  std::string message(int ev) const override {
    switch (static_cast<condition>(ev)) {
      case condition::retryable:
        return "retryable";
      case condition::ownership_lost:
        return "ownership lost";
      case condition::misuse:
        return "misuse";
    }
    return "unknown dlock condition";
  }
};

}  // namespace

// Never destroyed: a session's background threads may still compare error codes while the
// host's static objects are being destroyed at exit (UBSan saw a destroyed category so).
const std::error_category& category() noexcept {
  static const auto* c = new dlock_category;
  return *c;
}
const std::error_category& condition_category() noexcept {
  static const auto* c = new dlock_condition_category;
  return *c;
}
std::error_code make_error_code(errc e) noexcept { return {static_cast<int>(e), category()}; }
std::error_condition make_error_condition(condition c) noexcept {
  return {static_cast<int>(c), condition_category()};
}

namespace detail {
namespace {
thread_local std::string last_message;

// "context: cause". The code's text is added only when nothing more precise says why: it would
// otherwise repeat what the message says ("already held by this handle: the lock is already
// held by this handle").
std::string describe(const failure& f, const std::string& context) {
  std::string what = context;
  const std::string& why = f.message.empty() ? f.code.message() : f.message;
  what += (what.empty() ? "" : ": ") + why;
  return what;
}
}  // namespace

void raise(const failure& f, const std::string& context) {
  throw system_error(f.code, describe(f, context));
}

void remember(const failure& f, const std::string& context) noexcept {
  try {
    last_message = describe(f, context);
  } catch (...) {
    last_message.clear();  // out of memory: better nothing than a stale message
  }
}
}  // namespace detail

std::string last_error_message() { return detail::last_message; }

}  // namespace dlock
