// At most three report exports at once across every process sharing the URL: a counting
// semaphore. Each permit has its own fencing token and loss signal, like a lock's hold.
#include <dlock/dlock.hpp>
#include <iostream>

int main(int argc, char** argv) try {
  using namespace std::chrono_literals;
  auto session = dlock::session::open(argc > 1 ? argv[1] : "sqlite:///tmp/dlock-example.db");
  dlock::semaphore exports(session, "reports/export", 3);
  auto permit = exports.try_acquire_for(30s);
  if (!permit) return 75;  // three exports are running; try again later
  std::cout << "exporting with fencing token " << permit.token().value << "\n";
  // ... pass permit.token() with every write; stop if permit.lost_token() fires ...
  return 0;                               // the permit returns when it goes out of scope
} catch (const dlock::system_error& e) {  // a mistyped URL, a backend without semaphores...
  std::cerr << "dlock_semaphore_example: " << e.what() << "\n";
  const bool usage = e.code() == dlock::condition::misuse || e.code() == dlock::errc::unsupported;
  return usage ? 64 : 69;  // sysexits: usage / unavailable
}
