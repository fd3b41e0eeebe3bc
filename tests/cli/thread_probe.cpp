// Preloaded into dlock by signal_startup_test.cpp: every pthread_create whose caller can take
// SIGTERM appends a line to $DLOCK_THREAD_PROBE. A new thread inherits its creator's mask, so
// such a thread can take a SIGTERM meant for dlock's signal loop and kill dlock by the default
// action (exit 143), whatever the loop would have done.
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace {

using create_fn = int (*)(pthread_t*, const pthread_attr_t*, void* (*)(void*), void*);

void note_deliverable() {
  const char* path = std::getenv("DLOCK_THREAD_PROBE");
  if (!path || !*path) return;
  int fd = ::open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return;
  const char line[] = "pthread_create with SIGTERM deliverable\n";
  [[maybe_unused]] auto n = ::write(fd, line, sizeof line - 1);
  ::close(fd);
}

}  // namespace

extern "C" int pthread_create(pthread_t* thread, const pthread_attr_t* attr, void* (*start)(void*),
                              void* arg) {
  static auto real = reinterpret_cast<create_fn>(::dlsym(RTLD_NEXT, "pthread_create"));
  if (!real) return EAGAIN;
  sigset_t mask;
  if (::pthread_sigmask(SIG_BLOCK, nullptr, &mask) == 0 && !::sigismember(&mask, SIGTERM))
    note_deliverable();
  return real(thread, attr, start, arg);
}
