// dlock run NAME [options] -- CMD [ARGS...]: a cluster-wide flock(1).
#include <signal.h>

#include <dlock/mutex.hpp>
#include <memory>
#include <optional>
#include <thread>

#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "cli/signal_watch.hpp"
#include "cli/supervise.hpp"

namespace dlock::cli {
namespace {

struct run_options {
  std::string name;
  std::string url;
  std::string wait;
  bool nonblock{false};
  std::string ttl;
  int conflict_code{exit_conflict};
  std::string grace{"5s"};
  std::vector<std::string> command;
};

struct acquire_outcome {
  bool granted{false};
  int signal{0};  // the signal that interrupted the wait, if any
};

// Waits on a thread so the main thread can still react to SIGINT/SIGTERM/SIGHUP: the wait
// is cancelled and leaves nothing behind in the backend.
acquire_outcome acquire(dlock::mutex& m, std::chrono::steady_clock::time_point deadline,
                        signal_watch& signals) {
  acquire_outcome out;
  std::error_code ec;
  bool done = false;
  std::jthread waiter([&](std::stop_token stop) {
    out.granted = m.try_lock_until(deadline, stop, ec);
    signals.wakeup()->wake();
  });
  while (!done) {
    auto ev = signals.wait(std::chrono::milliseconds{-1});
    if (ev.signal == SIGINT || ev.signal == SIGTERM || ev.signal == SIGHUP) {
      out.signal = ev.signal;
      waiter.request_stop();
      done = true;
    }
    done = done || ev.woken;
  }
  waiter.join();
  if (out.signal != 0) {
    if (out.granted) m.unlock();
    out.granted = false;
    return out;
  }
  if (!out.granted && ec && ec != dlock::errc::timed_out && ec != dlock::errc::would_block) {
    // The error_code overload carries no backend detail: name the server at least.
    throw cli_error(exit_code_for(ec),
                    "acquire '" + m.name() + "' on " + m.session().url() + ": " + ec.message());
  }
  return out;
}

int run(const run_options& o) {
  if (o.command.empty()) throw cli_error(exit_usage, "run: missing command after --");
  std::optional<std::chrono::milliseconds> wait;
  if (!o.wait.empty()) wait = parse_duration_option("--wait", o.wait);
  dlock::session_options so;
  if (!o.ttl.empty()) {
    so.ttl = parse_duration_option("--ttl", o.ttl);
    if (so.ttl.count() <= 0) throw cli_error(exit_usage, "--ttl: must be greater than zero");
    if (so.ttl < std::chrono::milliseconds{10}) {
      throw cli_error(exit_usage, "--ttl: " + o.ttl + " is too short (at least 10ms)");
    }
  }
  auto grace = parse_duration_option("--grace", o.grace);
  check_lock_name(o.name);
  so.description = "dlock run " + o.command.front();

  signal_watch signals;  // before the session starts its threads, so they inherit the mask
  std::string url = resolve_url(o.url);
  auto session = open_session(url, so);
  struct closer {
    dlock::session& s;
    ~closer() { s.close(); }
  } close_at_exit{session};
  dlock::mutex m(session, o.name);

  bool granted = false;
  if (o.nonblock) {
    std::error_code ec;
    granted = m.try_lock(ec);
    if (!granted && ec && ec != dlock::errc::would_block && ec != dlock::errc::timed_out)
      throw cli_error(exit_code_for(ec),
                      "acquire '" + o.name + "' on " + session.url() + ": " + ec.message());
  } else {
    auto deadline = wait ? std::chrono::steady_clock::now() + *wait
                         : std::chrono::steady_clock::time_point::max();
    auto r = acquire(m, deadline, signals);
    if (r.signal != 0) {
      print_error("interrupted (signal " + std::to_string(r.signal) + ") while waiting for '" +
                  o.name + "'");
      return 128 + r.signal;
    }
    granted = r.granted;
  }
  if (!granted) {
    print_error("lock '" + o.name + "' is held by another owner" +
                (wait ? " (not granted within " + o.wait + ")" : std::string{}));
    return o.conflict_code;
  }
  child_spec spec{o.command, o.name, url, grace};
  int status = supervise(spec, m.current_hold(), signals);
  // Bounded by release_timeout (1 s); close() then does not wait on a server known to be
  // unreachable, so dlock exits about a second after CMD at worst.
  std::error_code release_ec;
  m.unlock(release_ec);
  if (release_ec == dlock::errc::backend_unavailable) {
    print_error("could not release '" + o.name +
                "' (backend unreachable); the lease frees it within " +
                std::to_string((session.ttl().count() + 999) / 1000) + " s");
  }
  return status;
}

}  // namespace

void add_run_command(CLI::App& app, int& status) {
  auto o = std::make_shared<run_options>();
  auto* cmd = app.add_subcommand("run", "Run CMD while holding lock NAME (a cluster-wide flock)");
  cmd->add_option("NAME", o->name, "Lock name")->required();
  cmd->add_option("CMD", o->command, "The command and its arguments, after --");
  cmd->add_option("--url", o->url, "Backend URL (default: $DLOCK_URL, else the local SQLite file)");
  auto* w = cmd->add_option("-w,--wait", o->wait, "Give up after waiting this long (e.g. 30s)");
  auto* n = cmd->add_flag("-n,--nonblock", o->nonblock, "Fail at once if the lock is held");
  w->excludes(n);
  cmd->add_option("--ttl", o->ttl, "Lease length (default 15s)");
  cmd->add_option("-E,--conflict-exit-code", o->conflict_code,
                  "Exit status when the lock is not granted (default 75)")
      ->check(CLI::Range(0, 255));
  cmd->add_option("--grace", o->grace,
                  "SIGTERM to SIGKILL delay when the lock is lost (default 5s)");
  cmd->footer(
      "CMD gets DLOCK_NAME, DLOCK_FENCING_TOKEN and DLOCK_URL in its environment.\n"
      "Exit status: CMD's (128+N if killed by signal N); 64 usage error; 69 backend\n"
      "unavailable; 70 lock lost while CMD ran (CMD got SIGTERM, SIGKILL after --grace);\n"
      "75 lock not granted (or -E N); 77 permission denied; 126/127 CMD not runnable.");
  cmd->callback([o, &status] { status = run(*o); });
}

}  // namespace dlock::cli
