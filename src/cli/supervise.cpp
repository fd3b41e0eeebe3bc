#include "cli/supervise.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>

#include "cli/common.hpp"
#include "cli/guard_deadline.hpp"

extern char** environ;

namespace dlock::cli {
namespace {

using clock = std::chrono::steady_clock;

std::vector<std::string> child_environment(const child_spec& spec, const dlock::hold& hold) {
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    std::string_view kv(*e);
    if (kv.starts_with("DLOCK_NAME=") || kv.starts_with("DLOCK_FENCING_TOKEN=") ||
        kv.starts_with("DLOCK_URL=")) {
      continue;
    }
    env.emplace_back(kv);
  }
  env.push_back("DLOCK_NAME=" + spec.lock_name);
  env.push_back("DLOCK_FENCING_TOKEN=" + std::to_string(hold.token().value));
  env.push_back("DLOCK_URL=" + spec.url);
  return env;
}

std::vector<char*> c_strings(std::vector<std::string>& v) {
  std::vector<char*> out;
  for (auto& s : v) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

// What the guard tells dlock as CMD ends: its wait status and when, in CLOCK_MONOTONIC ns.
struct cmd_end {
  int status;
  std::int64_t at_ns;
};

// Everything the guard and CMD need, built before fork(): dlock's renewal threads are running,
// so between fork and exec only async-signal-safe calls are made (no allocation, no locks).
struct launch_plan {
  char* const* argv;
  char* const* envp;
  sigset_t all;         // the guard blocks every signal and takes them with sigwaitinfo
  sigset_t guard_wait;  // SIGCHLD (CMD ended) and death_signal (dlock died)
  sigset_t cmd_mask;    // the mask dlock started with, for CMD
  int death_signal;
  pid_t dlock;
  pid_t dlock_group;
  int tty;            // the terminal whose foreground dlock was, or -1
  int exec_error_fd;  // CMD writes exec's errno here; close-on-exec, so EOF means it ran
  int status_fd;      // the guard writes CMD's wait status and end (cmd_end) before it exits
  guard_deadline* lease;
  std::chrono::milliseconds grace;
};

// A terminal (stdin, stdout or stderr) whose foreground process group is dlock's, or -1.
int foreground_terminal() {
  for (int fd : {STDIN_FILENO, STDOUT_FILENO, STDERR_FILENO}) {
    if (::isatty(fd) && ::tcgetpgrp(fd) == ::getpgrp()) return fd;
  }
  return -1;
}

// The terminal goes back to dlock's group, if CMD's group (the caller's) has it.
void give_terminal_back(const launch_plan& p) {
  if (p.tty >= 0 && ::tcgetpgrp(p.tty) == ::getpgrp()) ::tcsetpgrp(p.tty, p.dlock_group);
}

// The guard's exit status when dlock was gone before the guard could watch it: CMD never ran.
constexpr int guard_orphaned = 125;

// CMD: back to dlock's original signal mask, then exec. Dispositions are inherited as they
// came (exec resets handlers), so `nohup dlock run ...` still leaves SIGHUP ignored in CMD.
[[noreturn]] void exec_command(const launch_plan& p) {
  // If the guard alone is SIGKILLed, CMD goes with it (dlock then kills the rest of the
  // group). The guard leads the group, so its pid is our process group id.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != ::getpgrp()) ::_exit(guard_orphaned);
  ::sigprocmask(SIG_SETMASK, &p.cmd_mask, nullptr);
  restore_file_size_signal();
  ::execvpe(p.argv[0], p.argv, p.envp);  // glibc's PATH search uses the stack, not malloc
  int e = errno;
  [[maybe_unused]] auto n = ::write(p.exec_error_fd, &e, sizeof e);
  ::_exit(e == ENOENT ? 127 : 126);
}

// The next of the signals the guard waits for, or 0 if none came by `at`.
int wait_signal(const launch_plan& p, clock::time_point at) {
  auto ns = std::max(clock::duration::zero(), at - clock::now());
  auto s = std::chrono::duration_cast<std::chrono::seconds>(ns);
  timespec ts{static_cast<time_t>(s.count()),
              static_cast<long>(std::chrono::nanoseconds(ns - s).count())};
  int sig = ::sigtimedwait(&p.guard_wait, nullptr, &ts);
  return sig < 0 ? 0 : sig;
}

// When the guard must next look at the lease: its end, or the SIGKILL after --grace once the
// group was sent SIGTERM.
clock::time_point next_check(const launch_plan& p, std::optional<clock::time_point> kill_at) {
  return kill_at ? *kill_at : p.lease->valid_until();
}

// What dlock does when the lease is lost, done here when dlock cannot (it is frozen past the
// lease's end, and the server may already have granted the lock to another). dlock goes on
// extending the deadline while it runs, so a deadline that has passed is one nobody renewed.
void enforce_lease(const launch_plan& p, std::optional<clock::time_point>& kill_at) {
  auto now = clock::now();
  if (!kill_at && now >= p.lease->valid_until()) {
    if (p.lease->claim_loss(loss_enforcer::guard)) {
      ::kill(0, SIGTERM);  // our own copy stays blocked and pending
      ::kill(0, SIGCONT);  // a stopped group could not act on it
    }
    // dlock's own SIGKILL after --grace does not come while it is frozen.
    kill_at = now + p.grace;
  }
  if (kill_at && now >= *kill_at) ::kill(0, SIGKILL);  // the whole group, this guard included
}

[[noreturn]] void run_guard(const launch_plan& p) {
  ::sigprocmask(SIG_SETMASK, &p.all, nullptr);  // SIGTTOU too, so tcsetpgrp works from here
  ::setpgid(0, 0);
  // In a terminal's foreground, CMD's group takes the terminal as a shell's job would: CMD can
  // read it, and Ctrl-C / Ctrl-Z reach CMD directly.
  if (p.tty >= 0) ::tcsetpgrp(p.tty, ::getpid());
  ::prctl(PR_SET_PDEATHSIG, p.death_signal);
  // dlock may have died before prctl took effect: then nothing has started yet.
  if (::getppid() != p.dlock) ::_exit(guard_orphaned);
  // An inherited SIG_IGN would make the kernel reap CMD behind our back.
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  ::sigaction(SIGCHLD, &dfl, nullptr);
  pid_t cmd = ::fork();
  if (cmd == 0) exec_command(p);
  if (cmd < 0) {
    int e = errno;
    [[maybe_unused]] auto n = ::write(p.exec_error_fd, &e, sizeof e);
    ::_exit(126);
  }
  ::close(p.exec_error_fd);
  std::optional<clock::time_point> kill_at;
  for (;;) {
    int sig = wait_signal(p, next_check(p, kill_at));
    enforce_lease(p, kill_at);
    if (sig == p.death_signal && ::getppid() != p.dlock) {
      ::kill(0, SIGKILL);  // the whole group, this guard included
      ::_exit(guard_orphaned);
    }
    int st = 0;
    if (sig != SIGCHLD || ::waitpid(cmd, &st, WNOHANG | (p.tty >= 0 ? WUNTRACED : 0)) != cmd) {
      continue;
    }
    give_terminal_back(p);
    if (WIFSTOPPED(st)) {
      // Ctrl-Z (or a read from the terminal in the background): stop too, so dlock sees it,
      // stops, and the shell sees a stopped job. dlock continues the group on its SIGCONT.
      ::kill(::getpid(), SIGSTOP);
      continue;
    }
    // When CMD ended, on the monotonic clock every process shares (steady_clock's): dlock,
    // if it was stopped meanwhile, compares it with the lease it held then.
    timespec now{};
    ::clock_gettime(CLOCK_MONOTONIC, &now);
    const cmd_end end{st, static_cast<std::int64_t>(now.tv_sec) * 1000000000 + now.tv_nsec};
    [[maybe_unused]] auto n = ::write(p.status_fd, &end, sizeof end);
    ::_exit(WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
  }
}

struct started {
  pid_t group;  // the guard's pid, CMD's process group id
  int tty;      // the terminal handed to CMD's group, or -1
  int status;   // read end of launch_plan::status_fd
};

// Starts the guard, which starts CMD.
started spawn(const child_spec& spec, const dlock::hold& hold, const signal_watch& signals,
              guard_deadline& lease) {
  auto env = child_environment(spec, hold);
  auto argv = spec.argv;
  auto cenv = c_strings(env);
  auto cargv = c_strings(argv);
  int err[2], status[2];
  // As CMD not started: a bare "pipe: Too many open files" left a retester unsure it had run.
  if (::pipe2(err, O_CLOEXEC) != 0) throw cmd_not_started(spec.argv.front(), errno);
  if (::pipe2(status, O_CLOEXEC) != 0) {
    const int e = errno;
    ::close(err[0]);
    ::close(err[1]);
    throw cmd_not_started(spec.argv.front(), e);
  }
  launch_plan p{};
  p.argv = cargv.data();
  p.envp = cenv.data();
  p.cmd_mask = signals.original_mask();
  p.death_signal = SIGRTMAX;
  p.dlock = ::getpid();
  p.dlock_group = ::getpgrp();
  p.tty = foreground_terminal();
  p.exec_error_fd = err[1];
  p.status_fd = status[1];
  p.lease = &lease;
  p.grace = spec.grace;
  sigfillset(&p.all);
  sigemptyset(&p.guard_wait);
  sigaddset(&p.guard_wait, SIGCHLD);
  sigaddset(&p.guard_wait, p.death_signal);
  pid_t guard = ::fork();
  if (guard == 0) run_guard(p);
  int fork_errno = errno;
  ::close(err[1]);
  ::close(status[1]);
  if (guard < 0) {
    ::close(err[0]);
    ::close(status[0]);
    throw cmd_not_started(spec.argv.front(), fork_errno);
  }
  // Also here, so the group exists before dlock signals it (the guard may not have run yet).
  ::setpgid(guard, guard);
  int exec_errno = 0;
  ssize_t n;
  while ((n = ::read(err[0], &exec_errno, sizeof exec_errno)) < 0 && errno == EINTR) {
  }
  ::close(err[0]);
  if (n == static_cast<ssize_t>(sizeof exec_errno)) {
    while (::waitpid(guard, nullptr, 0) < 0 && errno == EINTR) {
    }
    ::close(status[0]);
    throw cmd_not_started(spec.argv[0], exec_errno);
  }
  return {guard, p.tty, status[0]};
}

// True (once per stop) if the guard has stopped: CMD was stopped from the terminal.
bool stopped(pid_t guard) {
  siginfo_t si{};
  return ::waitid(P_PID, static_cast<id_t>(guard), &si, WSTOPPED | WNOHANG) == 0 &&
         si.si_pid == guard;
}

// Passes the hold's deadline on to the guard and says how soon to do it again: before the
// deadline the guard knows, with a margin that shrinks with it, so that a renewal landing late
// in a lease that renewals were failing to extend still reaches the guard in time.
std::chrono::milliseconds report_deadline(const dlock::hold& hold, guard_deadline& lease) {
  auto until = hold.valid_until();
  lease.extend(until);
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - clock::now());
  return std::max(std::chrono::milliseconds{1}, left / 3);
}

struct guard_exit {
  int status;         // CMD's status as the guard reported it, or 128+N if the guard was killed
  bool guard_killed;  // by signal N: CMD's children were left unwatched
};

// How the guard ended, if it has, without reaping it: while it is unreaped its pid, which is
// CMD's process group id, cannot be reused, so kill(-group) stays safe.
std::optional<guard_exit> exited(pid_t guard) {
  siginfo_t si{};
  if (::waitid(P_PID, static_cast<id_t>(guard), &si, WEXITED | WNOHANG | WNOWAIT) != 0 ||
      si.si_pid != guard) {
    return std::nullopt;
  }
  if (si.si_code == CLD_EXITED) return guard_exit{si.si_status, false};
  return guard_exit{128 + si.si_status, true};
}

}  // namespace

supervised supervise(const child_spec& spec, const dlock::hold& hold, signal_watch& signals) {
  // The callback may outlive this call (it belongs to the hold), so it owns the waker.
  hold.on_state_change([w = signals.wakeup()](dlock::hold_state s) {
    if (s == dlock::hold_state::lost) w->wake();
  });
  if (!hold.is_held()) {
    print_error(spec.held + " was lost before '" + spec.argv[0] + "' started");
    return {exit_lock_lost, true, std::nullopt};
  }
  guard_deadline lease(hold.valid_until());
  const auto [group, tty, status_fd] = spawn(spec, hold, signals, lease);
  auto signal_group = [group](int sig) { ::kill(-group, sig); };
  bool lost = false;
  bool stopping = false;  // a terminating signal was passed on
  std::optional<clock::time_point> kill_at;
  std::optional<clock::time_point> term_at;  // --hold-at-most
  if (spec.hold_at_most) term_at = spec.granted_at + *spec.hold_at_most;
  // Says the loss (once), and sends SIGTERM unless the guard did while dlock was frozen.
  auto on_loss = [&] {
    lost = true;
    kill_at = clock::now() + spec.grace;
    if (!lease.claim_loss(loss_enforcer::dlock)) {
      print_error(spec.held + " lost while '" + spec.argv[0] +
                  "' ran (its lease ran out before a renewal reached dlock: dlock was "
                  "stopped or starved, or the backend refused or did not answer the renewals); "
                  "its guard sent SIGTERM to its process group " +
                  std::to_string(group) + " when the lease ended");
      return;
    }
    print_error(spec.held + " lost while '" + spec.argv[0] +
                "' ran (lease expired, backend gone, or session ended by an operator); "
                "sending SIGTERM to its process group " +
                std::to_string(group));
    signal_group(SIGTERM);
    signal_group(SIGCONT);  // a stopped group could not act on it
  };
  for (;;) {
    auto timeout = std::chrono::milliseconds{250};  // also polls is_held() as a backstop
    if (!lost) timeout = std::min(timeout, report_deadline(hold, lease));
    for (auto at : {kill_at, term_at}) {
      if (!at) continue;
      timeout = std::min(
          timeout, std::max(std::chrono::milliseconds{0},
                            std::chrono::ceil<std::chrono::milliseconds>(*at - clock::now())));
    }
    auto ev = signals.wait(timeout);
    if (auto end = exited(group)) {
      // The guard may have ended CMD for a lapsed lease while dlock was frozen.
      if (!lost && lease.enforcer() == loss_enforcer::guard) on_loss();
      cmd_end told{};
      const bool heard = ::read(status_fd, &told, sizeof told) == static_cast<ssize_t>(sizeof told);
      const bool killed = heard && WIFSIGNALED(told.status);
      ::close(status_fd);
      // CMD has exited. After a loss or a stop signal, or when a signal killed CMD (Ctrl-C
      // in a terminal reaches CMD, not dlock), nothing it left behind may run on without the
      // lock (a shell's `&` jobs ignore SIGINT and SIGQUIT, for one); a guard killed by a
      // signal left CMD's children unwatched. Once kill() returns, SIGKILL is pending in every
      // member: none runs another instruction of its own.
      if (lost || stopping || killed || end->guard_killed) signal_group(SIGKILL);
      if (end->guard_killed && !stopping && !lost) {
        // Else the run ends 128+N with no word: CMD's status was never heard, and the guard
        // that would have reported it is the one a signal ended. Not after a loss: the guard
        // SIGKILLs its own group (itself too) when --grace runs out, which read as a kill
        // from outside with an exit status dlock does not use (a tester's).
        print_error("the guard of '" + spec.argv[0] + "' (pid " + std::to_string(group) +
                    ") was killed by signal " + std::to_string(end->status - 128) +
                    "; its process group was killed too, so nothing it started runs on "
                    "without the lock (exit " +
                    std::to_string(end->status) + ")");
      }
      // The guard gives the terminal back, unless it was killed first.
      if (tty >= 0 && ::tcgetpgrp(tty) == group) ::tcsetpgrp(tty, ::getpgrp());
      while (::waitpid(group, nullptr, 0) < 0 && errno == EINTR) {
      }
      std::optional<std::chrono::steady_clock::time_point> ended_at;
      if (heard)
        ended_at = std::chrono::steady_clock::time_point(std::chrono::nanoseconds(told.at_ns));
      return {lost ? exit_lock_lost : end->status, lost, ended_at};
    }
    if (signal_watch::forwarded(ev.signal)) {
      stopping = true;
      signal_group(ev.signal);
    }
    if (ev.signal == SIGTSTP) {  // stop CMD with us, so it never runs while we cannot renew
      signal_group(SIGTSTP);
      if (tty < 0) ::kill(::getpid(), SIGSTOP);  // else the guard stops, and then we do
    }
    // Only in a terminal does the guard stop on purpose (Ctrl-Z): then the shell must see its
    // job stopped. Elsewhere a stopped guard was stopped from outside; dlock keeps renewing.
    if (tty >= 0 && stopped(group)) ::kill(::getpid(), SIGSTOP);
    if (ev.signal == SIGCONT) {
      // `fg` gave the terminal back to us: on to CMD's group again (`bg`: it stays ours).
      if (tty >= 0 && ::tcgetpgrp(tty) == ::getpgrp()) ::tcsetpgrp(tty, group);
      signal_group(SIGCONT);
    }
    // A guard that fired took the hold for lost: so does dlock, even if a renewal it could not
    // pass on in time (one that landed in the lease's last moments) kept it.
    if (!lost && (!hold.is_held() || lease.enforcer() == loss_enforcer::guard)) on_loss();
    if (term_at && clock::now() >= *term_at) {
      term_at.reset();
      if (!lost) {
        stopping = true;
        print_error("'" + spec.argv[0] + "' held " + spec.held +
                    " for --hold-at-most; sending SIGTERM to its process group " +
                    std::to_string(group));
        signal_group(SIGTERM);
        signal_group(SIGCONT);
        kill_at = clock::now() + spec.grace;
      }
    }
    if (kill_at && clock::now() >= *kill_at) {
      signal_group(SIGKILL);
      kill_at.reset();
    }
  }
}

}  // namespace dlock::cli
