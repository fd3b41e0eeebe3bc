// What loading a backend plug-in adds to session::open: the first lookup of a scheme in a
// fresh process (dlopen of libdlock-<name> and its client library, registration) against
// later lookups (a table search). Each scheme is measured in a child process of its own, so
// every first lookup is cold. Printed, not asserted: bench/README.md keeps the figures.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "core/registry.hpp"
#include "core/url.hpp"

namespace {

using clock_type = std::chrono::steady_clock;

double micros(clock_type::duration d) {
  return std::chrono::duration<double, std::micro>(d).count();
}

int measure(const char* text) {
  auto u = dlock::detail::parse_url(text);
  if (!u) return 2;
  auto start = clock_type::now();
  auto first = dlock::detail::find_backend(*u);
  auto cold = clock_type::now() - start;
  if (!first) {
    std::printf("%-12s %s\n", u->scheme.c_str(), first.error().message.c_str());
    return 1;
  }
  std::vector<double> later;
  for (int i = 0; i < 1000; ++i) {
    auto t = clock_type::now();
    (void)dlock::detail::find_backend(*u);
    later.push_back(micros(clock_type::now() - t));
  }
  std::nth_element(later.begin(), later.begin() + 500, later.end());
  std::printf("%-12s first lookup %8.1f us   later lookups (median) %6.2f us\n", u->scheme.c_str(),
              micros(cold), later[500]);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<const char*> urls = {"sqlite:///tmp/x.db",         "memory://x",
                                   "redis://127.0.0.1:6379",     "zk://127.0.0.1:2181",
                                   "postgres://127.0.0.1/dlock", "mysql://127.0.0.1/dlock"};
  if (argc > 1) urls.assign(argv + 1, argv + argc);
  std::printf("plug-in loading cost of session::open (each scheme in a fresh process)\n");
  int failed = 0;
  for (const char* u : urls) {
    std::fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
      int rc = measure(u);
      std::fflush(stdout);  // _exit does not flush
      _exit(rc);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) ++failed;
  }
  return failed == 0 ? 0 : 1;
}
