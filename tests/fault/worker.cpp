// dlock_fault_worker: one (or, for in-process backends, several) contender(s) in a fault run.
//
//   dlock_fault_worker --url URL --lock NAME --register PATH --log PATH --id ID
//                      [--threads N] [--max-ops N] [--max-seconds S] [--pause-ms MIN:MAX]
//                      [--wait-ms MS]
//                      [--late-check] [--cancel-waits] [--permits N [--no-register]]
//                      [--elect]
//
// Each contender loops: acquire -> read the fenced register with its fencing token -> pause ->
// check its loss signal -> write value+1 with its token -> release, logging every step
// (history.hpp). Before "ready" it prints a `session` line per contender (see session_line).
// Each acquire waits at most --wait-ms (default 2000; the outage cell's waiters wait longer).
// With --late-check the loss signal is checked BEFORE the pause instead of after it: the
// classic "checked, then got paused" holder, whose stale write only the fence can stop.
// With --permits N each contender takes one permit of a semaphore of N instead of the mutex
// (N = 1: the permit recipe must exclude exactly as the lock does; the checker is the same).
// With --elect each contender campaigns in an election of that name instead (its value: its
// id), leads while it holds, and resigns; the checker is the mutex's.
// --no-register: no fenced register (N > 1 holders share no one resource): acquire -> pause
// -> check its loss signal -> release, judged by the checker's limit rules.
// With --cancel-waits 31 acquires in 32 are cancelled between their start and 120 us into
// their wait (from a second thread, as an application's shutdown would), racing the wait's own
// requests: the library must neither die of it (SIGPIPE is at its default disposition here) nor
// leave an entry. Stops when its lock is lost, on stdin EOF, or at the count/time bound. Prints
// "ready" once every contender has opened its session. Exit: 0 stopped, 3 lock lost, 2 error.
//
// Its parts: worker_args (the command line), worker_contender (one contender's loop and its
// history log), worker_grant (what a contender takes), canceller (--cancel-waits).
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "backends/memory/memory_backend.hpp"
#include "fault/worker_args.hpp"
#include "fault/worker_contender.hpp"

using dlock::fault::worker::contender;
using dlock::fault::worker::event_log;
using dlock::fault::worker::outcome;

int main(int argc, char** argv) {
  auto c = dlock::fault::worker::parse_args(argc, argv);
  // A library must not kill its host with SIGPIPE whatever the host's disposition; the
  // default one is where it would (an inherited SIG_IGN would hide it).
  ::signal(SIGPIPE, SIG_DFL);
  event_log log(c.log);
  std::stop_source stop;
  // stdin EOF is the driver's "stop": detached, since a blocking read cannot be interrupted.
  std::thread([stop]() mutable {  // a copy shares the state and outlives main's scope
    char buf[64];
    while (::read(0, buf, sizeof buf) > 0) {
    }
    stop.request_stop();
  })
      .detach();

  std::vector<std::unique_ptr<contender>> cs;
  for (int i = 0; i < c.threads; ++i) {
    auto id = c.threads == 1 ? c.id : c.id + "." + std::to_string(i);
    cs.push_back(std::make_unique<contender>(c, id, log, stop.get_token()));
    if (!cs.back()->open()) return 2;
    std::printf("%s\n", cs.back()->session_line().c_str());
  }
  std::printf("ready\n");
  std::fflush(stdout);

  auto until = std::chrono::steady_clock::now() +
               std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                   std::chrono::duration<double>(c.max_seconds));
  std::atomic<int> worst{0};  // 0 stopped, 3 lost, 2 error
  {
    std::vector<std::jthread> threads;
    for (auto& ct : cs) {
      threads.emplace_back([&, p = ct.get()] {
        int code = 0;
        try {
          auto o = p->run(until);
          code = o == outcome::lost ? 3 : o == outcome::error ? 2 : 0;
        } catch (const std::exception& e) {
          std::fprintf(stderr, "dlock_fault_worker: %s\n", e.what());
          code = 2;
        }
        int cur = worst.load();
        while (code > 0 && (cur == 0 || code < cur) && !worst.compare_exchange_weak(cur, code)) {
        }
      });
    }
  }
  // An in-process store dies with this process, so the raw look for orphans happens here:
  // every contender has left its loop, so any entry left is one nobody will remove.
  if (c.url.starts_with("memory://")) {
    auto name = c.url.substr(9, c.url.find('?') - 9);
    std::printf("raw_entries %zu\n", dlock::detail::memory_raw_entries(name, c.lock));
    std::fflush(stdout);
  }
  if (c.cancel_waits) {
    long n = 0;
    for (auto& ct : cs) n += ct->cancelled();
    std::printf("cancelled_waits %ld\n", n);
    std::fflush(stdout);
  }
  for (auto& ct : cs) ct->close();
  return worst.load();
}
