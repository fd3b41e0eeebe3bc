#pragma once
// `dlock bench`: a load tool for locks, like redis-benchmark. Library code shared by the
// `dlock` CLI and the standalone `dlock-bench`; it uses only the public API (include/dlock)
// and core/duration.hpp, so a backend that lands later is benchmarked by its URL alone.
//
// Exit codes (sysexits.h, as the CLI): 0 done, 64 bad option or unknown URL scheme,
// 69 backend unreachable or failing, 70 the benchmark itself failed (a worker died).

#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace dlock::cli {

struct bench_options {
  std::string url;
  std::string scenario{"uncontended"};  // uncontended | contended | waiters | many-locks
  int clients{4};                       // contended: processes
  std::chrono::milliseconds duration{std::chrono::seconds{10}};
  bool json{false};
  std::size_t count{100000};        // many-locks: locks held; uncontended: cycle cap
  int waiters{1000};                // waiters: queued waiters behind one holder
  std::string lock{"dlock-bench"};  // lock name (prefix for many-locks)
  int permits{0};     // uncontended, waiters: one permit of a semaphore of N instead of the mutex
  bool elect{false};  // uncontended, waiters: a candidate of an election instead of the mutex
};

inline constexpr int bench_exit_usage = 64;
inline constexpr int bench_exit_unavailable = 69;
inline constexpr int bench_exit_failed = 70;

// Hard bounds, whatever the options say: a mistyped option must not flood a server.
inline constexpr int bench_max_clients = 256;
inline constexpr int bench_max_waiters = 5000;
inline constexpr std::size_t bench_max_count = 1'000'000;
inline constexpr std::chrono::minutes bench_max_duration{10};

// Runs one scenario against options.url and prints its figures (text or JSON) on stdout.
int run_bench(const bench_options& options);

// The hidden subcommand the contended and waiters scenarios re-exec /proc/self/exe with.
inline constexpr const char* bench_worker_command = "__bench-worker";
int run_bench_worker(const std::vector<std::string>& args);

// Adds `bench` (and the hidden worker subcommand) to a CLI11 app; `status` receives the exit
// code of whichever ran.
void add_bench_command(CLI::App& app, int& status);

}  // namespace dlock::cli
