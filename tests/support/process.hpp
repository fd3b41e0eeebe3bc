#pragma once
// Real child processes for tests: spawn with a pipe on stdout, read lines with a timeout,
// signal, wait. Used for multi-process lock tests and for starting servers.

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace dlock::test {

class reaper;

// The fields of /proc/PID/stat from the third on (state, ppid, ...: `man 5 proc`; field N is
// [N - 3]), read past the command name, which may hold spaces; empty if there is no such process.
std::vector<std::string> proc_stat_fields(pid_t pid);
// The contents of /proc/PID/<file> (say "cmdline"), or "" if the process is gone or the read
// fails. With read(2): a process that exits during the read makes it fail with ESRCH, which
// a std::istreambuf_iterator over an ifstream throws as an exception (a flash_sale_faults run
// failed so, on a worker exiting as the test looked at it).
std::string read_proc_file(pid_t pid, const std::string& file);

class child_process {
 public:
  struct options {
    std::map<std::string, std::string> env;  // added to the parent's environment
    std::string cwd;                         // empty: inherit
    std::string log_file;                    // stdout+stderr go here instead of a pipe
    bool new_process_group{true};
    bool merge_stderr{false};  // stderr into the stdout pipe (else inherited)
    // Kills the child if the test process dies first (support/reaper.hpp); must outlive it.
    reaper* reaped_by{nullptr};
  };

  // Starts argv[0] (searched in PATH) with argv. Throws std::runtime_error on failure.
  child_process(const std::vector<std::string>& argv, const options& opt);
  explicit child_process(const std::vector<std::string>& argv) : child_process(argv, options{}) {}
  child_process(child_process&&) noexcept;
  child_process& operator=(child_process&&) noexcept;
  child_process(const child_process&) = delete;
  // SIGKILLs and reaps the process (group) if still running.
  ~child_process();

  pid_t pid() const noexcept { return pid_; }
  // Next line of stdout (without '\n'), or nullopt on EOF or timeout.
  std::optional<std::string> read_line(std::chrono::milliseconds timeout);
  // Reads lines until one starts with `prefix`; returns it (or nullopt).
  std::optional<std::string> wait_for_line(const std::string& prefix,
                                           std::chrono::milliseconds timeout);
  // Reads lines until one contains `text`; returns it (or nullopt).
  std::optional<std::string> wait_for_line_with(const std::string& text,
                                                std::chrono::milliseconds timeout);
  void signal(int sig) const;
  // Waits for exit; returns the exit status (128+signal if killed), or nullopt on timeout.
  std::optional<int> wait(std::chrono::milliseconds timeout);
  bool running();
  // Closes our end of the child's stdin (a child may treat EOF as "stop").
  void close_stdin();
  void write_stdin(const std::string& s);

 private:
  std::optional<std::string> wait_for_line_if(const std::function<bool(const std::string&)>& wanted,
                                              std::chrono::milliseconds timeout);
  void reap_blocking();
  bool reap(bool block);
  reaper* reaper_{nullptr};
  pid_t pid_{-1};
  int out_fd_{-1};
  int in_fd_{-1};
  std::string buffer_;
  std::optional<int> status_;
};

// Runs a command to completion; returns {exit status, combined output}.
std::pair<int, std::string> run_command(const std::vector<std::string>& argv,
                                        std::chrono::milliseconds timeout = std::chrono::seconds{
                                            60});

}  // namespace dlock::test
