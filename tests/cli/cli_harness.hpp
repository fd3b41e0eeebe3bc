#pragma once
// Running the dlock binary in a private state directory (never the user's real one).

#include <sys/types.h>

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "support/net.hpp"
#include "support/process.hpp"

namespace dlock::test {

struct cli_result {
  int status{-1};
  std::string output;  // stdout and stderr together
  std::vector<std::string> lines() const;
};

class cli_sandbox {
 public:
  cli_sandbox();
  const std::string& dir() const { return dir_.path(); }
  // The default lock database of this sandbox (XDG_STATE_HOME/dlock/locks.db).
  std::string state_dir() const { return dir() + "/state/dlock"; }
  std::string url() const { return "sqlite://" + dir() + "/locks.db"; }

  // Environment for dlock: a private XDG_STATE_HOME and HOME, no DLOCK_URL.
  std::map<std::string, std::string> env() const;

  // Runs dlock to completion with `args` (argv[0] is added).
  cli_result run(const std::vector<std::string>& args,
                 std::chrono::milliseconds timeout = std::chrono::seconds{60}) const;
  // Starts dlock in the background; its stdout (and stderr) come through the pipe.
  child_process start(const std::vector<std::string>& args) const;
  // As run(), with dlock started through `wrapper` (`setpriv ... --` to run as another user,
  // `sh -c 'exec "$0" "$@" >/dev/full'` to redirect its stdout): wrapper, dlock, args.
  cli_result run_through(const std::vector<std::string>& wrapper,
                         const std::vector<std::string>& args,
                         std::chrono::milliseconds timeout = std::chrono::seconds{60}) const;
  // As start(), through `wrapper`.
  child_process start_through(const std::vector<std::string>& wrapper,
                              const std::vector<std::string>& args) const;

 private:
  temp_dir dir_{"dlock-cli-test"};
};

// A file's contents (empty if missing).
std::string read_file(const std::string& path);
bool file_exists(const std::string& path);
// True while process `pid` runs (a zombie, killed and not yet reaped, does not count).
bool running(pid_t pid);

}  // namespace dlock::test
