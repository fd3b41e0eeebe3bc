#pragma once
// How a SQL session's connection ended, as its client library saw it (the server's error, a
// close with no error sent, the client's error): kept when the connection is found gone, for
// the loss's message. Shared by session_conn (lease modes) and advisory_session. Under a mutex
// of its own, not the session's, which a request holds for up to its timeout.

#include <chrono>
#include <mutex>
#include <string>

namespace dlock::detail {

class conn_end_note {
 public:
  // Keeps `c`'s end reason, where its type has one (end_reason()) and it is not empty.
  template <class Conn>
  void keep(const Conn& c) {
    if constexpr (requires { c.end_reason(); }) {
      if (const auto& said = c.end_reason(); !said.empty()) {
        std::lock_guard lk(mu_);
        if (!here_) said_ = said;  // a cut of ours: the close's own text is not the reason
      }
    }
  }

  // This client closed the connection itself (a request unanswered for `request_timeout`):
  // that is the reason, not the server's (a tester's PostgreSQL blamed the server for our cut).
  void cut_here(std::chrono::milliseconds request_timeout) {
    std::lock_guard lk(mu_);
    said_ =
        "no answer within " + std::to_string(request_timeout.count()) + " ms, so dlock closed it";
    here_ = true;
  }

  // What was kept, or empty.
  std::string said() const {
    std::lock_guard lk(mu_);
    return said_;
  }

  // " (the server said: <said>)", " (<why it was cut here>)", or empty if nothing was kept.
  std::string in_parens() const {
    std::lock_guard lk(mu_);
    if (said_.empty()) return {};
    return here_ ? " (" + said_ + ")" : " (the server said: " + said_ + ")";
  }

  // "<where>: the server ended session <id>'s connection: <said>" (or "<where>: session <id>'s
  // connection was closed here: <why>"), or empty if nothing was kept.
  std::string reason(const std::string& where, const std::string& id) const {
    std::lock_guard lk(mu_);
    if (said_.empty()) return {};
    return here_ ? where + ": session " + id + "'s connection was closed here: " + said_
                 : where + ": the server ended session " + id + "'s connection: " + said_;
  }

 private:
  mutable std::mutex mu_;
  std::string said_;
  bool here_{false};
};

}  // namespace dlock::detail
