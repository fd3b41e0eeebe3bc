// A test process that dies without running destructors while its fixture's server runs, for
// reaper_test: the server and its directory must go all the same.
//   dlock_server_orphan redis|postgres abort|kill|restart
// Prints "server PID DIR" once the server answers; then abort() ("abort", "restart": after
// a stop and a start, so that the second start is the one to reap) or waits to be SIGKILLed.
#include <unistd.h>

#include <cstdlib>
#include <iostream>
#include <string>

#include "support/postgres_server.hpp"
#include "support/redis_server.hpp"

namespace {

[[noreturn]] void report_and_die(pid_t pid, const std::string& dir, const std::string& end) {
  std::cout << "server " << pid << " " << dir << std::endl;
  if (end == "kill") {
    for (;;) ::pause();
  }
  std::abort();
}

void redis(const std::string& end) {
  dlock::test::redis_server s;
  if (end == "restart") s.restart(false);
  report_and_die(s.pid(), s.dir(), end);
}

void postgres(const std::string& end) {
  dlock::test::postgres_server s;
  if (end == "restart") {
    s.stop();
    s.start();
  }
  report_and_die(s.postmaster_pid(), s.dir(), end);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: dlock_server_orphan redis|postgres abort|kill|restart\n";
    return 64;
  }
  const std::string kind = argv[1], end = argv[2];
  try {
    if (kind == "redis") redis(end);
    if (kind == "postgres") postgres(end);
  } catch (const std::exception& e) {
    std::cerr << "dlock_server_orphan: " << e.what() << "\n";
    return 1;
  }
  return 64;
}
