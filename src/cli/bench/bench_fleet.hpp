#pragma once
// A set of worker jobs running at once: child processes, or threads of this process when the
// backend's locks only exist inside one process (memory://).

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "cli/bench/bench_spawn.hpp"
#include "cli/bench/bench_worker.hpp"

namespace dlock::cli {

// True for URL schemes whose locks are visible to one process only.
bool process_local(const std::string& url);

class worker_fleet {
 public:
  explicit worker_fleet(bool in_process) : in_process_(in_process) {}
  ~worker_fleet();
  worker_fleet(const worker_fleet&) = delete;
  worker_fleet& operator=(const worker_fleet&) = delete;

  // Starts one job; false with `error` when it could not start.
  bool start(worker_job job, std::string& error);
  // Waits for every job (processes are killed at `deadline`; threads are bounded by their
  // jobs' own deadlines) and collects the records. Returns false if any job failed, with the
  // first failure in `error`.
  bool finish(std::chrono::steady_clock::time_point deadline, std::vector<cycle_record>& recs,
              std::string& error);

 private:
  struct thread_job {
    std::thread t;
    std::vector<cycle_record> recs;
    std::string error;
  };
  bool in_process_;
  scratch_dir dir_;
  worker_processes procs_;
  std::vector<std::string> files_;
  std::vector<std::unique_ptr<thread_job>> threads_;
};

}  // namespace dlock::cli
