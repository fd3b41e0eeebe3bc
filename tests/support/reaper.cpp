#include "support/reaper.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "support/process.hpp"

namespace dlock::test {
namespace {

// The watchdog. Lines on stdin: "watch PID STARTTIME", "forget PID", "quit". EOF before quit
// means the test process is gone: kill, then remove the directory. Children are killed by pid
// as well as by group: PostgreSQL's put themselves in groups of their own. On quit the fixture is
// ending normally and owns its directory still, but a process it never stopped (a constructor
// that threw after the start) is killed all the same. A watched process is killed only if its start
// time (field 22 of /proc/PID/stat) is the one it was told: else the pid names another process now.
// PID 1 of a container may never reap the orphans, so "dead" includes a zombie. Signals that
// reach the test's process group or session (^C, a closed terminal) must not end it first:
// it ignores them and runs in a session of its own.
constexpr const char* watchdog_script = R"sh(
trap '' HUP INT QUIT TERM PIPE
dir=$1 watched=
while read -r verb pid start; do
  case $verb in
  watch) watched="$watched $pid:$start" ;;
  forget)
    kept=
    for w in $watched; do [ "${w%%:*}" = "$pid" ] || kept="$kept $w"; done
    watched=$kept ;;
  quit) dir= && break ;;
  esac
done
field() {
  s= n=$(($2 - 2))
  read -r s < /proc/$1/stat || return 0
  set -- ${s##*) }
  eval "echo \${$n}"
} 2>/dev/null
children() {
  kids= parent=$1
  for f in /proc/[0-9]*/stat; do
    s=
    read -r s < $f || continue
    set -- ${s##*) }
    [ "$2" != "$parent" ] || { f=${f#/proc/} && kids="$kids ${f%/stat}"; }
  done
} 2>/dev/null
killed=
for w in $watched; do
  pid=${w%%:*} start=$(field ${w%%:*} 22)
  [ -z "$start" ] || [ "$start" = "${w#*:}" ] || continue
  children $pid
  kill -KILL -$pid 2>/dev/null
  for k in $kids; do kill -KILL $k 2>/dev/null; done
  kill -KILL $pid 2>/dev/null
  killed="$killed $pid $kids"
done
for pid in $killed; do
  n=0
  while [ $n -lt 100 ]; do
    case $(field $pid 3) in '' | Z | X) break ;; esac
    sleep 0.05
    n=$((n + 1))
  done
done
[ -n "$dir" ] || exit 0
for try in 1 2 3 4 5; do
  rm -rf -- "$dir" 2>/dev/null
  [ -e "$dir" ] || exit 0
  sleep 0.2
done
)sh";

// posix_spawn, not fork: a fixture may start its server from any thread of a multithreaded
// test, and all posix_spawn runs between its fork and exec is safe there. The watchdog gets
// no descriptor of ours but its stdin: one it held (a connection, a listening socket) would
// keep open what a test closes.
pid_t spawn_watchdog(int stdin_fd, std::string& dir) {
  posix_spawn_file_actions_t files;
  posix_spawn_file_actions_init(&files);
  posix_spawn_file_actions_adddup2(&files, stdin_fd, 0);
  posix_spawn_file_actions_addopen(&files, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_adddup2(&files, 1, 2);
  posix_spawn_file_actions_addclosefrom_np(&files, 3);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK);
  std::string sh = "sh", c = "-c", script = watchdog_script, name = "dlock-reaper";
  char* argv[] = {sh.data(), c.data(), script.data(), name.data(), dir.data(), nullptr};
  std::string path = "PATH=/usr/bin:/bin";
  char* envp[] = {path.data(), nullptr};
  pid_t pid = -1;
  int rc = posix_spawn(&pid, "/bin/sh", &files, &attr, argv, envp);
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&files);
  if (rc != 0)
    throw std::runtime_error("reaper: posix_spawn /bin/sh: " + std::string(std::strerror(rc)));
  return pid;
}

}  // namespace

reaper::reaper(std::string dir) {
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
    throw std::runtime_error("reaper: socketpair: " + std::string(std::strerror(errno)));
  }
  try {
    pid_ = spawn_watchdog(sv[1], dir);
  } catch (...) {
    ::close(sv[0]);
    ::close(sv[1]);
    throw;
  }
  ::close(sv[1]);
  fd_ = sv[0];
}

reaper::~reaper() {
  send("quit\n");
  ::close(fd_);
  int st = 0;
  while (::waitpid(pid_, &st, 0) < 0 && errno == EINTR) {
  }
}

void reaper::watch(pid_t pid) {
  auto stat = proc_stat_fields(pid);
  if (stat.size() < 20) return;  // gone and reaped already: nothing left to kill
  send("watch " + std::to_string(pid) + " " + stat[19] + "\n");
}

void reaper::forget(pid_t pid) { send("forget " + std::to_string(pid) + "\n"); }

void reaper::send(const std::string& line) {
  // One line per send, whole: fixtures may start servers from several threads at once.
  std::lock_guard lk(mu_);
  // MSG_NOSIGNAL: a watchdog someone killed is no reason to end the test with SIGPIPE.
  (void)::send(fd_, line.data(), line.size(), MSG_NOSIGNAL);
}

}  // namespace dlock::test
