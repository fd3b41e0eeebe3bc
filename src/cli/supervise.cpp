#include "cli/supervise.hpp"

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>

#include "cli/common.hpp"

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

// posix_spawnp rather than fork: dlock's renewal threads are running. The child gets an empty
// signal mask (dlock blocks the signals it watches); dispositions are inherited as they came,
// so `nohup dlock run ...` still leaves SIGHUP ignored in CMD.
pid_t spawn(const child_spec& spec, const dlock::hold& hold) {
  auto env = child_environment(spec, hold);
  auto argv = spec.argv;
  auto cenv = c_strings(env);
  auto cargv = c_strings(argv);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK);
  pid_t pid = -1;
  int rc = posix_spawnp(&pid, cargv[0], nullptr, &attr, cargv.data(), cenv.data());
  posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    // The shell's conventions: 127 not found, 126 found but not executable.
    int code = rc == ENOENT ? 127 : 126;
    throw cli_error(code, "cannot run '" + spec.argv[0] + "': " + std::strerror(rc));
  }
  return pid;
}

std::optional<int> reap(pid_t pid) {
  int st = 0;
  pid_t r = waitpid(pid, &st, WNOHANG);
  if (r != pid) return std::nullopt;
  if (WIFEXITED(st)) return WEXITSTATUS(st);
  return 128 + WTERMSIG(st);
}

}  // namespace

int supervise(const child_spec& spec, const dlock::hold& hold, signal_watch& signals) {
  // The callback may outlive this call (it belongs to the hold), so it owns the waker.
  hold.on_state_change([w = signals.wakeup()](dlock::hold_state s) {
    if (s == dlock::hold_state::lost) w->wake();
  });
  if (!hold.is_held()) {
    print_error("lock '" + spec.lock_name + "' was lost before '" + spec.argv[0] + "' started");
    return exit_lock_lost;
  }
  pid_t pid = spawn(spec, hold);
  bool lost = false;
  std::optional<clock::time_point> kill_at;
  for (;;) {
    auto timeout = std::chrono::milliseconds{250};  // also polls is_held() as a backstop
    if (kill_at) {
      timeout = std::max(std::chrono::milliseconds{0},
                         std::chrono::ceil<std::chrono::milliseconds>(*kill_at - clock::now()));
    }
    auto ev = signals.wait(timeout);
    if (auto status = reap(pid)) return lost ? exit_lock_lost : *status;
    if (ev.signal == SIGINT || ev.signal == SIGTERM || ev.signal == SIGHUP) {
      ::kill(pid, ev.signal);
    }
    if (!lost && !hold.is_held()) {
      lost = true;
      print_error("lock '" + spec.lock_name + "' lost while '" + spec.argv[0] +
                  "' ran (lease expired or backend gone); sending SIGTERM to pid " +
                  std::to_string(pid));
      ::kill(pid, SIGTERM);
      kill_at = clock::now() + spec.grace;
    }
    if (kill_at && clock::now() >= *kill_at) {
      ::kill(pid, SIGKILL);
      kill_at.reset();
    }
  }
}

}  // namespace dlock::cli
