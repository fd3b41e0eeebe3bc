#pragma once
// Runs CMD while a lock (a permit, leadership) is held: starts it in a process group of its own
// under a guard process, passes dlock's signals on to the group, and stops the group if the lock is
// lost.
//
// The process tree is dlock -> guard -> CMD (-> CMD's children). The guard is a fork of dlock
// that never execs: it leads CMD's process group, waits for CMD, and exits with CMD's status.
// It asks the kernel for a signal when dlock dies (PR_SET_PDEATHSIG), however dlock dies
// (SIGKILL, a crash), and then SIGKILLs the whole group, itself included. So CMD and
// everything it started in its group die with dlock, and since the guard is not reaped until
// dlock is done signalling, the group id can never name someone else's processes.
// When CMD ends by a signal, or exits after a loss or after dlock passed on a terminating
// signal, what is left of the group is SIGKILLed before the lock is released. In a terminal's
// foreground, CMD's group gets the terminal while it runs (Ctrl-C and Ctrl-Z reach it
// directly; a stopped CMD stops the guard and dlock, so the shell sees a stopped job).
// What escapes: a descendant that leaves the group on purpose (setsid, setpgid, a shell's job
// control), and background processes still running when CMD exits normally (as with flock).
// The guard also enforces the lease while dlock cannot (frozen by SIGSTOP, a debugger): dlock
// passes it the hold's valid_until() after renewals (guard_deadline), and a deadline that
// passes unextended gets the group SIGTERM, SIGKILL after --grace, as a loss seen by dlock
// would. One of the two sends the SIGTERM, never both. A guard frozen as well enforces
// nothing until it runs again.

#include <chrono>
#include <dlock/hold.hpp>
#include <optional>
#include <string>
#include <vector>

#include "cli/signal_watch.hpp"

namespace dlock::cli {

struct child_spec {
  std::vector<std::string> argv;
  std::string lock_name;
  std::string url;
  std::chrono::milliseconds grace{5000};  // SIGTERM -> SIGKILL when the lock is lost
  std::chrono::steady_clock::time_point granted_at{};
  // --hold-at-most: CMD's group gets SIGTERM once the lock was held this long (then SIGKILL
  // after `grace`), so a stuck job does not block the next period forever.
  std::optional<std::chrono::milliseconds> hold_at_most;
  // What is held, for messages: "lock 'NAME'", "leadership of election 'NAME'" (run_grant).
  std::string held;
};

struct supervised {
  // CMD's exit status (128+N if killed by signal N), 127/126 if it could not be started, or
  // exit_lock_lost if the lock was lost while it ran.
  int status;
  // The loss was seen and said: CMD's 70 is no loss, and a guard that stopped CMD at a lease's
  // end is one even if a renewal it never heard of kept the hold.
  bool lost;
  // When CMD ended, as its guard saw it: dlock may have been stopped then, and learns it later.
  std::optional<std::chrono::steady_clock::time_point> cmd_ended;
};

// Call from the main thread: the guard's death signal follows the thread that forked it.
supervised supervise(const child_spec& spec, const dlock::hold& hold, signal_watch& signals);

}  // namespace dlock::cli
