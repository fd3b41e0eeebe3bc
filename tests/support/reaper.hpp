#pragma once
// Servers that outlive their test process. A fixture stops its servers in its destructor; a
// test process that dies without running destructors (std::terminate, abort, an ASan report,
// SIGKILL) used to leave them running for good, with their temporary directories.
//
// A reaper is a watchdog process (/bin/sh) per fixture. Its stdin is a socket whose other end
// only the test process holds (close-on-exec, so no server inherits it): when the test process
// ends in any way, the watchdog reads EOF, SIGKILLs each process still watched, with its process
// group and its children (PostgreSQL's lead groups of their own), and removes the fixture's
// directory. A fixture that ends normally tells it to quit: then it removes nothing, and kills
// only what the fixture failed to stop. Not PR_SET_PDEATHSIG: that fires when the thread that
// forked ends, and fixtures start servers from short-lived threads (zk_ensemble).
//
// Pid reuse: a child is forgotten before it is reaped (child_process does so), so its pid
// cannot name another process while the watchdog still watches it; a process that is not our
// child (the postmaster pg_ctl starts) is forgotten as soon as it is stopped. As a last check
// the watchdog kills only a process whose start time is still the one it was told.

#include <sys/types.h>

#include <mutex>
#include <string>

namespace dlock::test {

class reaper {
 public:
  // Starts the watchdog. `dir` (empty: none) is removed once the watched processes are killed;
  // it must be the fixture's own.
  explicit reaper(std::string dir = {});
  reaper(const reaper&) = delete;
  reaper& operator=(const reaper&) = delete;
  // Tells the watchdog to exit, waiting for it: it removes nothing, and kills only what is still
  // watched (a server whose fixture's constructor threw before it could stop it).
  ~reaper();

  // Kills `pid`, the process group it leads (if any) and its children when the test process
  // dies. Safe to call from several threads at once.
  void watch(pid_t pid);
  // No longer: call while `pid` cannot yet have been reused (before reaping it).
  void forget(pid_t pid);

 private:
  void send(const std::string& line);
  std::mutex mu_;
  int fd_{-1};
  pid_t pid_{-1};
};

}  // namespace dlock::test
