#include "core/release_messages.hpp"

namespace dlock::detail {

std::string unconfirmed_message(const std::string& name, std::chrono::milliseconds ttl,
                                const std::optional<failure>& last) {
  auto secs = (ttl.count() + 999) / 1000;
  std::string m = "could not release '" + name +
                  "' (backend unreachable); the lease frees it within " + std::to_string(secs) +
                  " s";
  if (last && !last->message.empty()) m += " (last error: " + last->message + ")";
  return m;
}

// The server answered, and refused: no lost connection to blame.
std::string refused_message(const std::string& name, std::chrono::milliseconds ttl,
                            const failure& why, bool session_ended) {
  auto secs = (ttl.count() + 999) / 1000;
  std::string m = "could not release '" + name + "': the server refused to remove its entry (" +
                  why.message + ")";
  if (session_ended) {
    return m +
           "; dlock ended the session so that the server drops the entry (every hold of this "
           "session is lost): the lock is free once the server has closed the session, within " +
           std::to_string(secs) + " s at the latest";
  }
  return m + "; retried in the background until it is gone, the session ends or this process exits";
}

}  // namespace dlock::detail
