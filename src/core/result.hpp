#pragma once
// The internal error currency: std::expected carrying a code and a human message, so the
// message a backend produced ("wrong password for user x") reaches the user's exception.

#include <dlock/errors.hpp>
#include <expected>
#include <string>
#include <system_error>
#include <utility>

namespace dlock::detail {

struct failure {
  std::error_code code;
  std::string message;  // names what was wrong; may be empty
};

template <class T>
using result = std::expected<T, failure>;

inline std::unexpected<failure> fail(errc code, std::string message = {}) {
  return std::unexpected(failure{make_error_code(code), std::move(message)});
}
inline std::unexpected<failure> fail(failure f) { return std::unexpected(std::move(f)); }

// True for failures worth retrying with backoff (connection reset, server busy).
inline bool is_transient(const failure& f) {
  return f.code == make_error_code(errc::backend_unavailable);
}

// Throws dlock::system_error with "context: message".
[[noreturn]] void raise(const failure& f, const std::string& context);
// Records what raise() would have thrown, for dlock::last_error_message() (the error_code
// overloads).
void remember(const failure& f, const std::string& context) noexcept;

}  // namespace dlock::detail
