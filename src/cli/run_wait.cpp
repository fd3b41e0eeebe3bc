#include "cli/run_wait.hpp"

#include <signal.h>
#include <unistd.h>

#include <thread>

#include "cli/common.hpp"

namespace dlock::cli {

std::string detail(std::error_code ec) {
  auto m = dlock::last_error_message();
  return m.empty() ? ec.message() : m;
}

acquire_outcome acquire(run_grant& m, std::chrono::steady_clock::time_point deadline,
                        signal_watch& signals) {
  acquire_outcome out;
  std::error_code ec;
  bool done = false;
  std::string why;  // the library's detail, kept per thread: read it on the waiting thread
  std::jthread waiter([&](std::stop_token stop) {
    out.granted = m.try_until(deadline, stop, ec);
    if (!out.granted && ec) why = detail(ec);
    signals.wakeup()->wake();
  });
  while (!done) {
    auto ev = signals.wait(std::chrono::milliseconds{-1});
    if (signal_watch::forwarded(ev.signal)) {
      out.signal = ev.signal;
      waiter.request_stop();
      done = true;
    }
    if (ev.signal == SIGTSTP) ::kill(::getpid(), SIGSTOP);  // Ctrl-Z while waiting: just stop
    done = done || ev.woken;
  }
  waiter.join();
  if (out.signal != 0) {
    std::error_code ignored;
    if (out.granted) m.release(ignored);
    out.granted = false;
    return out;
  }
  if (!out.granted && ec == dlock::errc::session_expired) {
    out.session_ended = why;
  } else if (!out.granted && ec && ec != dlock::errc::timed_out && ec != dlock::errc::would_block) {
    throw cli_error(exit_code_for(ec), why);
  }
  return out;
}

}  // namespace dlock::cli
