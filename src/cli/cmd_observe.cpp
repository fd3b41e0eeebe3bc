// dlock observe NAME [--url URL] [--json]: one line per change of election NAME's leader or
// its value, the first one the current state, until a signal ends it.
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>

#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "cli/leader_format.hpp"
#include "cli/queue_format.hpp"
#include "cli/signal_watch.hpp"

namespace dlock::cli {
namespace {

using sys_clock = std::chrono::system_clock;

struct observe_options {
  std::string name;
  std::string url;
  bool json{false};
};

// Thrown when stdout's reader is gone (`dlock observe x | head -1`): observing ends, exit 0.
struct reader_gone {};

// Writes one line and flushes it: the reader is usually a pipe, and a change must reach it
// when it happens, not when a buffer fills.
void print_line(const std::string& line) {
  if (std::fputs((line + '\n').c_str(), stdout) >= 0 && std::fflush(stdout) == 0) return;
  if (errno == EPIPE) throw reader_gone{};
  throw cli_error(exit_io, std::string("cannot write to stdout: ") + std::strerror(errno));
}

void print_state(const observe_options& o, const std::optional<dlock::leader_info>& l) {
  const auto now = sys_clock::now();
  if (o.json) {
    nlohmann::json j;
    j["version"] = json_schema_version;
    j["name"] = o.name;
    j["seen_at"] = iso_utc(now);
    j["seen_at_ms"] =
        std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count();
    j["leader"] = leader_json(l);
    print_line(dump_json(j));
    return;
  }
  print_line(local_time(now) + "  " +
             (l ? "leader " + leader_line(*l, /*age=*/false) : std::string("no leader")));
}

// True once stdout is a pipe whose reader has gone (`dlock observe x | head -1`): a watcher
// would otherwise learn it only at its next write, which may be hours away.
bool reader_closed() {
  pollfd out{STDOUT_FILENO, 0, 0};
  return ::poll(&out, 1, 0) == 1 && (out.revents & POLLERR) != 0;
}

// Sleeps `d`, or less if `stop` is requested.
void nap(std::chrono::milliseconds d, std::stop_token stop) {
  std::mutex m;
  std::condition_variable_any cv;
  std::unique_lock lock(m);
  cv.wait_for(lock, stop, d, [] { return false; });
}

// Prints every change after `seen` until `stop` (false), or until the session expires or the
// backend has been unreachable for a TTL (true: the caller opens a new session, whose open
// gives the backend its open timeout to come back, else ends the observer with 69).
bool follow(const observe_options& o, dlock::election& e, std::chrono::milliseconds ttl,
            std::optional<dlock::leader_info>& seen, std::stop_token stop) {
  auto failing_since = std::chrono::steady_clock::time_point::max();  // max: not failing
  while (!stop.stop_requested()) {
    std::optional<dlock::leader_info> next;
    try {
      next = e.next_change(seen, std::chrono::steady_clock::time_point::max(), stop);
    } catch (const dlock::system_error& err) {
      if (err.code() == dlock::errc::session_expired) return true;
      const auto now = std::chrono::steady_clock::now();
      if (err.code() != dlock::errc::backend_unavailable) throw;
      failing_since = std::min(failing_since, now);
      if (now - failing_since >= ttl) return true;  // a new session, if one can be opened
      nap(std::chrono::milliseconds{200}, stop);
      continue;
    }
    failing_since = std::chrono::steady_clock::time_point::max();
    if (next == seen) continue;  // only when stopped: next_change returns on a change
    seen = std::move(next);
    print_state(o, seen);
  }
  return false;
}

// Prints the current state, then every change, until `stop`. Runs on its own thread, so the
// main thread stays in the signal loop.
void watch(const observe_options& o, const std::string& url, std::stop_token stop) {
  std::optional<dlock::leader_info> seen;
  bool printed = false;
  // A database that does not exist has no leader, and viewing must not create it: say so,
  // then wait for the first `dlock elect` to create it.
  if (sqlite_file_missing(url)) {
    print_state(o, seen);
    printed = true;
    while (sqlite_file_missing(url)) {
      if (stop.stop_requested()) return;
      nap(std::chrono::milliseconds{250}, stop);
    }
  }
  // An observer holds nothing, so a session that expires under it (its renewals failed through
  // an outage) is replaced by a new one, whose first look reports what changed meanwhile: a
  // tester's observer with ttl=2s quit on a 1.5 s Redis restart that every holder survived. A
  // backend still unreachable then fails the new session's open (69).
  dlock::session_options so{.description = "dlock observe", .observe_only = true};
  // An open_timeout given is retried until (session_options): a server restarting gets the
  // request timeout to come back, as for `dlock run` (CI-43: a reopen gave up after 9 attempts
  // in 788 ms, the policy's bound, while the server was still down).
  so.open_timeout = so.request_timeout;
  while (!stop.stop_requested()) {
    auto session = open_session(url, so);
    struct closer {
      dlock::session& s;
      ~closer() { s.close(); }
    } close_at_exit{session};
    dlock::election e(session, o.name);
    if (!printed) {
      seen = e.leader();
      print_state(o, seen);
      printed = true;
    }
    if (!follow(o, e, session.ttl(), seen, stop)) return;
  }
}

int observe(const observe_options& o) {
  // First: every thread started from here on inherits the blocked mask. A thread started
  // before it could take a SIGTERM and kill dlock instead of ending it cleanly.
  signal_watch signals;
  check_lock_name(o.name);
  const auto url = resolve_url(o.url, /*create=*/false);
  std::exception_ptr failure;
  std::atomic<bool> watched{false};
  std::jthread watcher([&](std::stop_token stop) {
    try {
      watch(o, url, stop);
    } catch (...) {
      failure = std::current_exception();
    }
    watched = true;
    signals.wakeup()->wake();
  });
  bool signalled = false;
  for (;;) {
    auto ev = signals.wait(std::chrono::milliseconds{500});
    // A terminating signal is how a watcher is meant to end (Ctrl-C, systemctl stop): clean.
    if (signal_watch::forwarded(ev.signal)) {
      signalled = true;
      break;
    }
    if (ev.signal == SIGTSTP) ::kill(::getpid(), SIGSTOP);  // Ctrl-Z: just stop
    if (ev.woken || reader_closed()) break;
  }
  watcher.request_stop();
  // A read in flight is not cut off by the stop: on a server that does not answer it ends at
  // the request timeout, with an error that is no reason to fail a watcher stopped on purpose
  // (a tester's Ctrl-C exited 69). An observer holds nothing and has printed every line it
  // will, so a signal does not wait for that read past a moment: it ends the process at once.
  if (signalled) {
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::milliseconds{300};
    while (!watched && std::chrono::steady_clock::now() < give_up) {
      std::this_thread::sleep_for(std::chrono::milliseconds{10});
    }
    if (!watched) {
      std::fflush(stdout);
      std::_Exit(exit_ok);
    }
  }
  watcher.join();
  if (!failure || signalled) return exit_ok;  // a signal, or the reader gone
  try {
    std::rethrow_exception(failure);
  } catch (const reader_gone&) {
    return exit_ok;
  } catch (...) {
    rethrow_as_cli_error();
  }
}

}  // namespace

void add_observe_command(CLI::App& app, int& status) {
  auto o = std::make_shared<observe_options>();
  auto* cmd = app.add_subcommand(
      "observe", "Print a line per change of election NAME's leader or value, until stopped");
  cmd->add_option("NAME", o->name, "Election name")->required();
  add_url_option(cmd, o->url);
  cmd->add_flag("--json", o->json, "Print one JSON object per line for scripts");
  cmd->footer(
      "The first line is the current state (a leader, or none); each line is flushed.\n"
      "SIGINT, SIGTERM (and SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGALRM) end it.\n"
      "Exit status: 0 ended by a signal or by the reader of its output going away, 64 usage or\n"
      "a backend without elections, 69 backend unavailable, 74 stdout not writable, 77\n"
      "permission denied. Viewing creates nothing.");
  cmd->callback([o, &status] { status = observe(*o); });
}

}  // namespace dlock::cli
