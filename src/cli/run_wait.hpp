#pragma once
// `dlock run`'s wait for its grant: on a thread of its own, so that the main thread can still
// react to a terminating signal.

#include <chrono>
#include <optional>
#include <string>
#include <system_error>

#include "cli/run_grant.hpp"
#include "cli/signal_watch.hpp"

namespace dlock::cli {

struct acquire_outcome {
  bool granted{false};
  int signal{0};  // the signal that interrupted the wait, if any
  // The session expired while it waited (a server restart or an outage past its lease): the
  // library's word for it, for the caller, which may wait on in a new session.
  std::optional<std::string> session_ended;
};

// The library's detailed message for the calling thread's last failure, else the code's text.
std::string detail(std::error_code ec);

// Waits for `m` until `deadline`. A terminating signal (SIGINT, SIGTERM, ...; see
// signal_watch::forwarded) cancels the wait, which leaves nothing behind in the backend.
// Throws cli_error on a failure other than a timeout, a conflict or the session's expiry.
acquire_outcome acquire(run_grant& m, std::chrono::steady_clock::time_point deadline,
                        signal_watch& signals);

}  // namespace dlock::cli
