// What lock cycles cost their own process beyond the round trips, counted rather than timed.
// The ZooKeeper C client re-resolved its host names every time its I/O thread woke (a name
// service lookup: netlink, /etc/hosts, /etc/gai.conf, 20-odd system calls), 8 lookups per lock
// cycle and most of a contended client's CPU (bench/README.md, 2026-12-06). Every backend is
// held to the same: a session resolves its servers when it connects, not per request, and a
// wait opens no connection of its own each time.
#include <dlfcn.h>
#include <netdb.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <dlock/dlock.hpp>
#include <thread>

#include "conformance/suite.hpp"

namespace {

std::atomic<long> lookups{0};

}  // namespace

// Interposed for the whole executable: every library it loads resolves names through this
// definition, so the count includes the clients' own calls. Forwards to the next one (libc, or
// a sanitizer's interceptor).
extern "C" int getaddrinfo(const char* node, const char* service, const struct addrinfo* hints,
                           struct addrinfo** res) {
  using fn = int (*)(const char*, const char*, const struct addrinfo*, struct addrinfo**);
  static const auto next = reinterpret_cast<fn>(dlsym(RTLD_NEXT, "getaddrinfo"));
  lookups.fetch_add(1, std::memory_order_relaxed);
  if (next == nullptr) return EAI_SYSTEM;
  return next(node, service, hints, res);
}

namespace dlock::test {

// ZooKeeper's client may re-resolve once per 10 s window while connected (docs/zookeeper.md);
// nothing may resolve per cycle, uncontended or handed over.
TEST_P(conformance, lock_cycles_and_handoffs_do_not_resolve_host_names) {
  auto a = open();
  auto b = open();
  dlock::mutex ma(a, lock_name());
  dlock::mutex mb(b, lock_name());
  // Warm-up: the first cycle and the first wait may open what a session opens once.
  ma.lock();
  std::jthread first([&] {
    mb.lock();
    mb.unlock();
  });
  std::this_thread::sleep_for(20ms);  // mostly enough for the waiter to be waiting
  ma.unlock();
  first.join();

  const auto before = lookups.load();
  const auto start = std::chrono::steady_clock::now();
  constexpr int cycles = 100;
  for (int i = 0; i < cycles; ++i) {
    ma.lock();
    ma.unlock();
  }
  constexpr int handoffs = 20;
  for (int i = 0; i < handoffs; ++i) {
    ma.lock();
    std::jthread waiter([&] {
      mb.lock();
      mb.unlock();
    });
    std::this_thread::sleep_for(5ms);
    ma.unlock();
  }
  const auto spent = std::chrono::steady_clock::now() - start;
  const long resolved = lookups.load() - before;
  const long allowed = 1 + static_cast<long>(spent / 10s);
  std::printf("%d cycles and %d handoffs in %.2f s: %ld host name lookups\n", cycles, handoffs,
              std::chrono::duration<double>(spent).count(), resolved);
  EXPECT_LE(resolved, allowed) << resolved << " host name lookups in " << cycles
                               << " lock cycles and " << handoffs << " handoffs";
}

}  // namespace dlock::test
