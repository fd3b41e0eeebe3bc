#pragma once
// How a SQL session's connection ended, as its client library saw it (the server's error, a
// close with no error sent, the client's error): kept when the connection is found gone, for
// the loss's message. Shared by session_conn (lease modes) and advisory_session. Under a mutex
// of its own, not the session's, which a request holds for up to its timeout.

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
        said_ = said;
      }
    }
  }

  // What was kept, or empty.
  std::string said() const {
    std::lock_guard lk(mu_);
    return said_;
  }

  // "<where>: the server ended session <id>'s connection: <said>", or empty if nothing was kept.
  std::string reason(const std::string& where, const std::string& id) const {
    auto s = said();
    return s.empty() ? s : where + ": the server ended session " + id + "'s connection: " + s;
  }

 private:
  mutable std::mutex mu_;
  std::string said_;
};

}  // namespace dlock::detail
