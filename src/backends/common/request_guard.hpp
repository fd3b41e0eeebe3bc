#pragma once
// The request timeout of a connection that IS a session (MariaDB, PostgreSQL), kept by dlock
// instead of the client library. Past it the session is over, since cutting the request off
// ends the connection, and ending the connection frees its locks on the server. So the holds
// must hear they are lost first: `before_cut` tells them (the engine's loss signal), then the
// socket is shut down. The library's own timeout would close the connection first and tell no
// one, so it is set longer (backstop()) and only backs this up.
// Thread safety: arm() from any thread; `before_cut` runs on the cutter's thread.

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <utility>

#include "backends/common/request_cutter.hpp"
#include "backends/common/socket_interrupt.hpp"

namespace dlock::detail {

struct request_guard {
  request_cutter* cutter{nullptr};
  std::chrono::milliseconds after{0};  // the request timeout
  std::function<void()> before_cut;    // may be empty

  // The client library's own timeout for a guarded connection: long enough that `before_cut`
  // (the holds' loss callbacks) has run well before it.
  static std::chrono::milliseconds backstop(std::chrono::milliseconds request_timeout) {
    return request_timeout * 2 + std::chrono::seconds(1);
  }

  // Armed for one request on the connection `cut` shuts down; disarmed when dropped.
  [[nodiscard]] std::optional<request_cutter::ticket> arm(
      const std::shared_ptr<socket_interrupt>& cut) const {
    if (!cutter || after.count() <= 0) return std::nullopt;
    return cutter->arm(std::chrono::steady_clock::now() + after, cut, before_cut);
  }
};

}  // namespace dlock::detail
