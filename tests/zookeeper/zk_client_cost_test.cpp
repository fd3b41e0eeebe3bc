// What a session costs its own process, counted rather than timed: the ZooKeeper C client
// re-resolves its host names each time its I/O thread wakes unless told otherwise, a name
// service lookup (netlink, /etc/hosts, /etc/gai.conf: 20-odd system calls) per request and
// reply, which was most of a contended client's CPU (bench/README.md, 2026-12-06).
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <netdb.h>

#include <atomic>
#include <chrono>
#include <cstdio>

#include "support/net.hpp"
#include "zookeeper/zk_env.hpp"

namespace {

std::atomic<long> lookups{0};

}  // namespace

// Interposed for this executable: every library it loads resolves names through it, so the
// count includes the C client's own calls. Forwards to the next definition (libc, or a
// sanitizer's interceptor).
extern "C" int getaddrinfo(const char* node, const char* service, const struct addrinfo* hints,
                           struct addrinfo** res) {
  using fn = int (*)(const char*, const char*, const struct addrinfo*, struct addrinfo**);
  static const auto next = reinterpret_cast<fn>(dlsym(RTLD_NEXT, "getaddrinfo"));
  lookups.fetch_add(1, std::memory_order_relaxed);
  if (next == nullptr) return EAI_SYSTEM;
  return next(node, service, hints, res);
}

namespace dlock::test {
namespace {

using namespace std::chrono_literals;

// A connected session resolves its servers when it connects and then at most every 10 s,
// as Java's client (which resolves only when it connects): never once per request.
TEST(zk_client_cost, lock_cycles_do_not_resolve_host_names) {
  auto s = session::open(zk_url(30s));
  dlock::mutex m(s, "cost-" + random_suffix());
  m.lock();  // the first cycle creates the lock node; count from the second on
  m.unlock();
  constexpr int cycles = 200;
  const auto before = lookups.load();
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < cycles; ++i) {
    m.lock();
    m.unlock();
  }
  const auto spent = std::chrono::steady_clock::now() - start;
  const auto resolved = lookups.load() - before;
  // One routine re-resolution per 10 s window, plus one for the window that was open.
  const long allowed = 1 + static_cast<long>(spent / 10s);
  std::printf("%d lock cycles in %.2f s: %ld host name lookups\n", cycles,
              std::chrono::duration<double>(spent).count(), resolved);
  EXPECT_LE(resolved, allowed) << resolved << " host name lookups in " << cycles << " lock cycles";
}

}  // namespace
}  // namespace dlock::test
