// The lock recipes' pure decision over queues of 1..1000 entries: what every waiter computes
// after every wake-up, so its cost grows with the queue.
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "core/verdict.hpp"

namespace {

using dlock::detail::entry;
using dlock::detail::entry_kind;

std::vector<entry> queue_of(std::size_t n, bool readers) {
  std::vector<entry> q(n);
  for (std::size_t i = 0; i < n; ++i) {
    q[i].id = "session-0123456789abcdef-" + std::to_string(i);
    q[i].token = i + 1;
    // Readers everywhere but one writer in the middle: the shared recipe's worst case.
    q[i].kind = readers && i != n / 2 ? entry_kind::shared : entry_kind::exclusive;
  }
  return q;
}

void decide_last(benchmark::State& state, bool readers) {
  auto q = queue_of(static_cast<std::size_t>(state.range(0)), readers);
  for (auto _ : state) {
    benchmark::DoNotOptimize(dlock::detail::decide(q, q.size() - 1));
  }
  state.SetComplexityN(state.range(0));
}

void BM_decide_exclusive(benchmark::State& s) { decide_last(s, false); }
void BM_decide_shared(benchmark::State& s) { decide_last(s, true); }

// The engine's step after a wake-up: find our entry by id, then decide.
void BM_find_and_decide(benchmark::State& state) {
  auto q = queue_of(static_cast<std::size_t>(state.range(0)), false);
  const std::string id = q.back().id;
  for (auto _ : state) {
    auto pos = dlock::detail::find_entry(q, id);
    benchmark::DoNotOptimize(dlock::detail::decide(q, *pos));
  }
  state.SetComplexityN(state.range(0));
}

// A semaphore of 5: the last of n permit entries (a waiter unless n <= 5).
void BM_decide_permit(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  std::vector<entry> q(n);
  for (std::size_t i = 0; i < n; ++i) {
    q[i].id = dlock::detail::permit_entry_id("session-0123456789abcdef-" + std::to_string(i), 5);
    q[i].token = i + 1;
  }
  dlock::detail::read_recipes(q);
  for (auto _ : state) {
    benchmark::DoNotOptimize(dlock::detail::decide(q, q.size() - 1));
  }
  state.SetComplexityN(state.range(0));
}

// What every listing now costs the engine besides the verdict: reading the permits' limits out
// of their ids (a lock's entries have none; the scan is the same).
void BM_read_recipes(benchmark::State& state) {
  auto q = queue_of(static_cast<std::size_t>(state.range(0)), false);
  for (auto _ : state) {
    dlock::detail::read_recipes(q);
    benchmark::DoNotOptimize(q.data());
  }
  state.SetComplexityN(state.range(0));
}

BENCHMARK(BM_decide_permit)->RangeMultiplier(10)->Range(1, 1000)->Complexity();
BENCHMARK(BM_read_recipes)->RangeMultiplier(10)->Range(1, 1000)->Complexity();
BENCHMARK(BM_decide_exclusive)->RangeMultiplier(10)->Range(1, 1000)->Complexity();
BENCHMARK(BM_decide_shared)->RangeMultiplier(10)->Range(1, 1000)->Complexity();
BENCHMARK(BM_find_and_decide)->RangeMultiplier(10)->Range(1, 1000)->Complexity();

}  // namespace
