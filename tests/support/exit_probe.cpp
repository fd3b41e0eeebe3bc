// A host that returns from main() while its release is still being retried in the
// background (the link to the server is slow): the case of the worker that crashed in
// OpenSSL's cleanup. An atexit handler registered before the session opened -- as OpenSSL's
// is -- runs after libdlock's and reports whether any dlock thread is still inside a backend
// call at that point: exit 0 if none, 3 if some are.
//   dlock_exit_probe URL LOCK   (stdin: "release"; stdout: granted, released, in flight N)
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <dlock/dlock.hpp>
#include <iostream>
#include <string>
#include <thread>

#include "core/exit_guard.hpp"

namespace {

void say(const std::string& line) { std::cout << line << std::endl; }

void check_at_exit() {
  const auto n = dlock::detail::exit_guard::calls_in_flight();
  std::cout << "at exit " << n << std::endl;
  if (n != 0) ::_exit(3);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: dlock_exit_probe URL LOCK\n";
    return 64;
  }
  std::atexit(&check_at_exit);
  try {
    dlock::session_options o;
    o.release_timeout = std::chrono::milliseconds{50};
    auto s = dlock::session::open(argv[1], o);
    dlock::mutex m(s, argv[2]);
    m.lock();
    say("granted");
    std::string cmd;
    if (!std::getline(std::cin, cmd) || cmd != "release") return 2;
    std::error_code ec;
    m.unlock(ec);
    say("released " + ec.message());
    // The removal goes on in a remover thread, inside a request on the slow link.
    for (int i = 0; i < 200 && dlock::detail::exit_guard::calls_in_flight() == 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds{10});
    }
    say("in flight " + std::to_string(dlock::detail::exit_guard::calls_in_flight()));
  } catch (const std::exception& e) {
    std::cerr << "dlock_exit_probe: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
