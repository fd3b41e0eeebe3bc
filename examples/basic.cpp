// The README's example: a nightly job that must not run twice at once, anywhere.
#include <dlock/dlock.hpp>
#include <iostream>
#include <mutex>

int main(int argc, char** argv) try {
  using namespace std::chrono_literals;
  auto session = dlock::session::open(argc > 1 ? argv[1] : "sqlite:///tmp/dlock-example.db");
  dlock::mutex lock(session, "billing/nightly");
  std::unique_lock guard(lock, 5s);  // try_lock_for(5s)
  if (!guard) return 75;             // someone else is running it
  std::cout << "running with fencing token " << lock.token().value << "\n";
  // ... pass lock.token() with every write; stop if lock.current_hold().lost_token() fires
  // (on dlock's thread: after a pause, is_held() knows first, as it reads the clock itself) ...
  return 0;
} catch (const dlock::system_error& e) {  // a mistyped URL, a server that cannot be reached...
  std::cerr << "dlock_example: " << e.what() << "\n";
  return e.code() == dlock::condition::misuse ? 64 : 69;  // sysexits: usage / unavailable
}
