#pragma once
// The host's exit must not find a dlock thread inside a client library.
//
// A session's background threads (remover threads, a bounded close's finisher) may still be
// in a backend call when the host returns from main(). exit() then runs the atexit handlers,
// OpenSSL's cleanup among them, while those threads go on: a remover that logged in anew
// (PostgreSQL's SCRAM uses OpenSSL) crashed a fault-run worker so. At exit, dlock's own handler
// runs first (registered after OpenSSL's, which it makes sure exists): it interrupts every
// live session's requests as the end of its lease would (backend_session::on_expired), stops
// their retries, and waits a short bounded time for the calls in flight to leave. Nothing is
// lost by it: the server frees a departed process's entries at its lease's end.

#include <cstddef>
#include <memory>

namespace dlock::detail {

class session_core;

namespace exit_guard {

// Registers the handler (once, and once more after OpenSSL first appears in the process) and
// `s` as a session to interrupt; `s` is held weakly.
void track(const std::shared_ptr<session_core>& s) noexcept;

// True once the handler ran: background work starts no new backend call.
bool exiting() noexcept;

// The scope of one backend call made by a background thread, waited for by the handler.
class background_call {
 public:
  background_call() noexcept;
  ~background_call();
  background_call(const background_call&) = delete;
  background_call& operator=(const background_call&) = delete;
};

// A session being closed on a thread of its own (a bounded close's finisher, which may hold
// the last reference or none): interrupted by the handler like a live session, and waited for.
class closing {
 public:
  explicit closing(session_core* s) noexcept;
  ~closing();
  closing(const closing&) = delete;
  closing& operator=(const closing&) = delete;

 private:
  session_core* s_;
  background_call call_;
};

// Background calls in flight (a test hook).
std::size_t calls_in_flight() noexcept;

}  // namespace exit_guard
}  // namespace dlock::detail
