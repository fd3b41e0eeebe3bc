#pragma once
// Worker processes: this same executable (/proc/self/exe) re-run with the hidden worker
// subcommand. Only the pids started here are ever signalled.

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

namespace dlock::cli {

class worker_processes {
 public:
  worker_processes() = default;
  worker_processes(const worker_processes&) = delete;
  worker_processes& operator=(const worker_processes&) = delete;
  // SIGKILLs and reaps every worker still running.
  ~worker_processes();

  // Starts /proc/self/exe with `args`; false (and errno text in `error`) if it could not.
  bool spawn(const std::vector<std::string>& args, std::string& error);
  // Waits for every worker until `deadline`, then SIGKILLs the rest. Returns how many exited
  // with status 0.
  int wait_all(std::chrono::steady_clock::time_point deadline);
  std::size_t size() const { return pids_.size(); }

 private:
  std::vector<pid_t> pids_;
};

// A fresh private directory for result files, removed with its files on destruction.
class scratch_dir {
 public:
  scratch_dir();
  ~scratch_dir();
  scratch_dir(const scratch_dir&) = delete;
  scratch_dir& operator=(const scratch_dir&) = delete;
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

}  // namespace dlock::cli
