// One client of the mixed-version test (redis_mixed_version_test.sh): built once against an
// older dlock and once against this one, from the public API only. It takes lock NAME
// exclusive (x) or shared (s) ITERATIONS times and, while holding, records itself in an
// occupancy file guarded by flock(2): a writer beside anyone, or a reader beside a writer, is
// an overlap (exit 1).
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <dlock/dlock.hpp>
#include <iostream>
#include <string>
#include <thread>

namespace {

// The occupancy file holds "readers writers"; `delta` is added to one of them under flock.
bool occupy(const char* path, bool writer, int delta) {
  int fd = ::open(path, O_RDWR | O_CREAT, 0644);
  if (fd < 0 || ::flock(fd, LOCK_EX) != 0) std::exit(2);
  char buf[64] = {};
  auto n = ::pread(fd, buf, sizeof buf - 1, 0);
  int readers = 0, writers = 0;
  if (n > 0) std::sscanf(buf, "%d %d", &readers, &writers);
  bool ok = true;
  if (delta > 0) ok = writer ? readers == 0 && writers == 0 : writers == 0;
  (writer ? writers : readers) += delta;
  auto text = std::to_string(readers) + " " + std::to_string(writers) + "\n";
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, text.data(), text.size(), 0) < 0) std::exit(2);
  ::flock(fd, LOCK_UN);
  ::close(fd);
  return ok;
}

}  // namespace

int main(int argc, char** argv) try {
  if (argc != 6) {
    std::cerr << "usage: mixed_client URL NAME x|s ITERATIONS OCCUPANCY_FILE\n";
    return 64;
  }
  const bool writer = std::string(argv[3]) == "x";
  const int iterations = std::atoi(argv[4]);
  auto session = dlock::session::open(argv[1]);
  dlock::shared_mutex lock(session, argv[2]);
  for (int i = 0; i < iterations; ++i) {
    writer ? lock.lock() : lock.lock_shared();
    if (!occupy(argv[5], writer, 1)) {
      std::cerr << "mixed_client: overlap (" << (writer ? "writer" : "reader") << ")\n";
      return 1;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(200 + (i % 5) * 300));
    occupy(argv[5], writer, -1);
    writer ? lock.unlock() : lock.unlock_shared();
  }
  return 0;
} catch (const dlock::system_error& e) {
  std::cerr << "mixed_client: " << e.what() << "\n";
  return 69;
}
