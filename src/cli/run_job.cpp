#include "cli/run_job.hpp"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <thread>

#include "cli/run_grant.hpp"
#include "cli/run_metrics.hpp"
#include "cli/run_wait.hpp"
#include "cli/signal_watch.hpp"
#include "cli/supervise.hpp"
#include "cli/warning_log.hpp"
#include "core/duration.hpp"
#include "core/url.hpp"

namespace dlock::cli {
namespace {

// The shortest lease a command runs under (see the --ttl check).
constexpr std::chrono::milliseconds min_command_ttl{100};

// -n: how long connecting may take (one attempt against a silent server, not the default
// request timeout's several).
constexpr std::chrono::milliseconds nonblock_open_budget{2000};

// --hold-at-least: a job shorter than the cron skew between nodes must not let a node whose
// clock is behind run it again in the same period (ShedLock's lockAtLeastFor). dlock keeps
// holding, renewing, until `until`; a terminating signal or a loss ends the wait early.
// Returns the signal that ended it (0: none), which breaks the window as a loss does.
int keep_until(std::chrono::steady_clock::time_point until, const dlock::hold& hold,
               signal_watch& signals) {
  for (;;) {
    auto left =
        std::chrono::ceil<std::chrono::milliseconds>(until - std::chrono::steady_clock::now());
    if (left.count() <= 0 || !hold.is_held()) return 0;
    auto ev = signals.wait(std::min(left, std::chrono::milliseconds{250}));
    if (signal_watch::forwarded(ev.signal)) return ev.signal;
  }
}

int run_reported(const run_options& o, run_report& rep);

}  // namespace

int run_job(const run_options& o) {
  run_report rep{.verb = o.verb, .name = o.name, .started = std::chrono::system_clock::now()};
  if (!o.metrics_file) return run_reported(o, rep);
  // A path that cannot be written (or an empty one) is found before the job runs, not after.
  check_metrics_path(*o.metrics_file);
  // The job's own status outranks its report: a failed write is said, and the status kept.
  auto finish = [&](int code) {
    rep.exit_code = code;
    rep.ended = std::chrono::system_clock::now();
    try {
      write_run_metrics(*o.metrics_file, rep);
    } catch (const cli_error& e) {
      print_error(e.what());
    }
  };
  int code = 0;
  try {
    code = run_reported(o, rep);
  } catch (const cli_error& e) {
    rep.outcome = run_outcome::error;
    finish(e.code());
    throw;
  } catch (...) {
    rep.outcome = run_outcome::error;
    try {
      rethrow_as_cli_error();
    } catch (const cli_error& e) {
      finish(e.code());
      throw;
    }
  }
  finish(code);
  return code;
}

namespace {

// A release that found the lock gone (lock_lost) after CMD ended under a valid lease: the loss
// followed CMD only if the lease ran out on this client's clock while the release waited for an
// unreachable backend. A server that says the entry is gone while the lease is still valid here
// (unlock --force, a session the server ended) does not say when it went, so it may have been
// while CMD ran.
bool release_loss_followed_cmd(bool held_when_cmd_ended, const dlock::hold& h) {
  return held_when_cmd_ended && std::chrono::steady_clock::now() >= h.valid_until();
}

// When the hold ended, measured from its grant, if that was before `window_end`; nothing if it
// is still held or outlived the window. Its lease's end is the earliest it can have ended (a
// loss the backend reported may have come later, but not after now).
std::optional<std::chrono::milliseconds> lease_end_within(
    const dlock::hold& h, std::chrono::steady_clock::time_point granted_at,
    std::chrono::steady_clock::time_point window_end) {
  if (h.is_held()) return std::nullopt;
  const auto ended = std::min(h.valid_until(), std::chrono::steady_clock::now());
  if (ended >= window_end) return std::nullopt;
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::max(ended, granted_at) -
                                                               granted_at);
}

int run_reported(const run_options& o, run_report& rep) {
  // `dlock run -- true` makes "true" the NAME: show what was taken for NAME.
  if (o.command.empty())
    throw cli_error(exit_usage, o.verb + ": missing command (want: dlock " + o.verb +
                                    " NAME [options] -- CMD [ARGS...]; NAME was '" + o.name + "')");
  // `dlock run x -- "$JOB"` with JOB unset: refused before the lock is taken, not a grant
  // spent on exit 127.
  if (o.command.front().empty())
    throw cli_error(exit_usage, o.verb + ": the command is an empty word (an unset variable?)");
  std::optional<std::chrono::milliseconds> wait;
  if (o.wait) wait = parse_duration_option("--wait", *o.wait);
  dlock::session_options so;
  if (o.ttl) {
    so.ttl = parse_duration_option("--ttl", *o.ttl);
    if (so.ttl.count() <= 0) throw cli_error(exit_usage, "--ttl: must be greater than zero");
    // The library takes 10ms, but a command's lease passes through dlock's renewals and its
    // guard process: below 100ms a host's ordinary scheduling delays end it (an outside
    // tester's --ttl 10ms exited 70 every time, on an idle host).
    if (so.ttl < min_command_ttl) {
      throw cli_error(exit_usage, "--ttl: " + *o.ttl +
                                      " is too short for a command's lease (at least " +
                                      dlock::detail::format_duration(min_command_ttl) + ")");
    }
  }
  auto grace = parse_duration_option("--grace", o.grace);
  std::optional<std::chrono::milliseconds> hold_at_least, hold_at_most;
  if (o.hold_at_least) hold_at_least = parse_duration_option("--hold-at-least", *o.hold_at_least);
  if (o.hold_at_most) {
    hold_at_most = parse_duration_option("--hold-at-most", *o.hold_at_most);
    if (hold_at_most->count() <= 0)
      throw cli_error(exit_usage, "--hold-at-most: must be greater than zero");
  }
  if (hold_at_least && hold_at_most && *hold_at_least > *hold_at_most) {
    throw cli_error(exit_usage, "--hold-at-least " + *o.hold_at_least +
                                    " is longer than --hold-at-most " + *o.hold_at_most);
  }
  check_lock_name(o.name);
  so.description = "dlock " + o.verb + " " + o.command.front();

  // Connecting is part of the wait the user bounded: -w D counts from here, and the open gets
  // at most D (-n: one short try) of the session's request timeout.
  const auto started = std::chrono::steady_clock::now();
  // An open_timeout given is also retried until (session_options): a run started during a
  // server's restart waits it out, up to the request timeout (5 s by default).
  if (o.nonblock) {
    so.open_timeout = std::min(so.request_timeout, nonblock_open_budget);
  } else if (wait) {
    // A floor, so that -w 0 still lets a healthy server answer.
    so.open_timeout = std::min(so.request_timeout, std::max(*wait, std::chrono::milliseconds{100}));
  } else {
    so.open_timeout = so.request_timeout;
  }
  // Before the session starts its threads, so they inherit the mask; nothing above starts
  // one (check_lock_name opens no session): a thread that could take a SIGTERM would kill dlock
  // instead of letting it end CMD and release.
  signal_watch signals;
  std::string url = resolve_url(o.url);
  auto warnings = std::make_shared<warning_log>();
  so.observer = warnings;
  auto session = open_session(url, so);
  warnings->arm();
  struct closer {
    dlock::session& s;
    ~closer() { s.close(); }
  } close_at_exit{session};
  if (session.ttl() < min_command_ttl) {  // from the URL's ttl=, which --ttl did not check
    throw cli_error(exit_usage, "the lease (ttl=" + dlock::detail::format_duration(session.ttl()) +
                                    " in the URL) is too short for a command's lease (at least " +
                                    dlock::detail::format_duration(min_command_ttl) + ")");
  }
  const grant_spec what{static_cast<std::uint32_t>(o.permits), o.campaign};
  std::optional<run_grant> holder;
  holder.emplace(session, o.name, what);
  auto& m = *holder;

  bool granted = false;
  if (o.nonblock) {
    std::error_code ec;
    granted = m.try_once(ec);
    if (!granted && ec && ec != dlock::errc::would_block && ec != dlock::errc::timed_out)
      throw cli_error(exit_code_for(ec), detail(ec));
  } else {
    auto deadline = wait ? started + *wait : std::chrono::steady_clock::time_point::max();
    auto r = acquire(m, deadline, signals);
    // A session that ended while it waited (every PostgreSQL session ends with a restart, any
    // with an outage past its lease): flock -w waits for the lock, not for one connection, so
    // the wait goes on in a new session, for what is left of -w (an outside tester's -w 60s
    // exited 69 a second into a restart). Without -w, one open's worth of retries.
    while (r.session_ended && std::chrono::steady_clock::now() < deadline) {
      print_error("warning: " + *r.session_ended + "; waiting on in a new session");
      session.close();
      so.open_timeout = wait ? std::max(std::chrono::ceil<std::chrono::milliseconds>(
                                            deadline - std::chrono::steady_clock::now()),
                                        std::chrono::milliseconds{100})
                             : so.request_timeout;
      session = open_session(url, so);
      holder.emplace(session, o.name, what);
      r = acquire(m, deadline, signals);
    }
    if (r.session_ended)
      throw cli_error(exit_code_for(dlock::errc::session_expired), *r.session_ended);
    rep.waited = std::chrono::steady_clock::now() - started;
    if (r.signal != 0) {
      rep.outcome = run_outcome::interrupted;
      print_error("interrupted (signal " + std::to_string(r.signal) + ") while waiting for '" +
                  o.name + "'");
      return 128 + r.signal;
    }
    granted = r.granted;
  }
  if (!rep.waited) rep.waited = std::chrono::steady_clock::now() - started;
  if (!granted) {
    rep.outcome = run_outcome::conflict;
    // flock -n is silent on a conflict; -q is that. Otherwise say who holds it.
    if (!o.quiet) {
      std::string msg = m.not_granted();
      if (o.nonblock || (wait && wait->count() == 0))
        msg += " (one try)";
      else if (wait)
        msg += (o.campaign ? " (not elected within " : " (not granted within ") +
               dlock::detail::format_duration(*wait) + ")";
      auto who = m.who();
      if (!who.empty())
        msg += ": " + who;
      else if (o.permits == 0 && !o.campaign)
        msg += " by another owner";
      print_error(msg);
    }
    return o.conflict_code;
  }
  if (o.verbose) {
    // The lease in force: a server may grant another than --ttl asked (ZooKeeper clamps a
    // session timeout to [2, 20] ticks), and the lease is what a stopped dlock keeps the lock.
    std::string lease = "lease " + dlock::detail::format_duration(session.ttl());
    if (o.ttl && session.ttl() != so.ttl) {
      lease += ": the server's, for --ttl " + *o.ttl;
    } else if (!o.ttl) {
      // Or asked in the URL (--url, $DLOCK_URL): ?ttl=
      if (auto u = dlock::detail::parse_url(url); u && u->query.contains("ttl")) {
        auto asked = dlock::detail::parse_duration(u->param("ttl"));
        if (asked && *asked != session.ttl()) lease += ": the server's, for ttl=" + u->param("ttl");
      }
    }
    // A session whose renewals are failing is granted with what is left of its lease, which
    // may be little (a tester's disk-full waiter: 0.18 s of 3 s, its CMD killed at once).
    if (session.state() == dlock::session_state::suspended) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          m.hold().valid_until() - std::chrono::steady_clock::now());
      lease += "; renewals failing, " +
               dlock::detail::format_duration(std::max(left, std::chrono::milliseconds{0})) +
               " left";
    }
    print_error(
        m.granted() + " with fencing token " + std::to_string(m.hold().token().value) + " after " +
        dlock::detail::format_duration(std::chrono::duration_cast<std::chrono::milliseconds>(
            std::chrono::steady_clock::now() - started)) +
        " (" + lease + ")");
  }
  child_spec spec{o.command,    o.name,  url, grace, std::chrono::steady_clock::now(),
                  hold_at_most, m.held()};
  rep.token = m.hold().token().value;
  const auto [cmd_status, lost_while_cmd_ran, cmd_ended] = supervise(spec, m.hold(), signals);
  int status = cmd_status;
  // dlock may have been stopped (SIGSTOP) while CMD ran and ended: the time its guard saw CMD
  // end, against the lease as the last renewal left it, says whether the lease outlived CMD
  // (not the renewals that could not run, nor the clock when dlock ran again).
  // The guard reads the clock after it reaps CMD, so a guard stopped too reports a later end
  // (the safe side). A lease that lapsed while dlock was stopped, after CMD ended, is no loss.
  const bool held_now = m.hold().is_held();
  const bool lapsed_after_cmd = !held_now && cmd_ended && *cmd_ended < m.hold().valid_until() &&
                                m.hold().state() != dlock::hold_state::released;
  const bool held_when_cmd_ended = held_now || lapsed_after_cmd;
  // The --hold-at-least window is broken if the lease ended inside it: dlock stopped or starved
  // past its TTL, or the backend unreachable that long. Another node may then have run the job
  // within the window, which the exit status (CMD's) cannot say.
  std::optional<std::chrono::milliseconds> window_cut_after;
  // A terminating signal inside the window ends it too: dlock stops as asked and releases
  // (staying would only defer the SIGKILL that follows an ignored SIGTERM), and says so.
  int window_signal = 0;
  std::chrono::milliseconds window_signal_after{0};
  if (hold_at_least && status != exit_lock_lost) {
    const auto window_end = spec.granted_at + *hold_at_least;
    window_signal = keep_until(window_end, m.hold(), signals);
    window_signal_after = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::chrono::steady_clock::now() - spec.granted_at);
    window_cut_after = lease_end_within(m.hold(), spec.granted_at, window_end);
    rep.window_kept = !window_cut_after && window_signal == 0;
  }
  // Bounded by release_timeout (1 s); close() then does not wait on a server known to be
  // unreachable, so dlock exits about a second after CMD at worst.
  // A CMD that exits 70 of its own accord is not a lost lock.
  bool lost = lost_while_cmd_ran || (status == exit_lock_lost && !m.hold().is_held());
  std::error_code release_ec;
  const dlock::hold grant = m.hold();  // m lets go of its view at the release; this one stays
  m.release(release_ec);
  if (release_ec == dlock::errc::lock_lost && !lost &&
      !release_loss_followed_cmd(held_when_cmd_ended, grant)) {
    // Nothing says the loss came after CMD ended: another owner may have been granted the lock
    // while CMD still ran, so the run is a lost one, as if the renewal had noticed in time.
    lost = true;
    status = exit_lock_lost;
    // m.held() names what was held: "lock 'NAME'", "leadership of election 'NAME'" (as
    // docs/cli.md promises for elect), "a permit of semaphore 'NAME'".
    print_error(held_when_cmd_ended
                    ? m.held() +
                          " was gone when dlock released it, before its lease would have ended "
                          "(an operator's unlock --force, or the server ended the session): "
                          "another owner may have been granted it while CMD ran"
                    : m.held() + " lost while '" + o.command[0] +
                          "' ran (its lease had ended when CMD did; was dlock stopped?): another "
                          "owner may have been granted it meanwhile");
  }
  // A lost hold ended at its lease's end at the latest, however long after that dlock (stopped,
  // say) found out: a tester's run frozen past its 1 s lease reported 2.3 s held.
  const auto now = std::chrono::steady_clock::now();
  rep.held = (lost ? std::max(std::min(now, grant.valid_until()), spec.granted_at) : now) -
             spec.granted_at;
  rep.outcome = lost ? run_outcome::lost : run_outcome::ran;
  if (window_cut_after && !lost) {
    print_error("--hold-at-least " + *o.hold_at_least + " was not kept: " + m.held() +
                " ended about " + dlock::detail::format_duration(*window_cut_after) +
                " after its grant, when its lease ran out (was dlock stopped or starved of CPU, or "
                "the backend unreachable, longer than the TTL?); another node may have run the job "
                "within the window");
  } else if (window_signal != 0 && !lost) {
    print_error("--hold-at-least " + *o.hold_at_least +
                " was not kept: dlock was stopped by signal " + std::to_string(window_signal) +
                " " + dlock::detail::format_duration(window_signal_after) +
                " after the grant and " + (release_ec ? "left " : "released ") + m.held() +
                "; another node may run the job within the window");
  } else if (release_ec && warnings->said("could not release '" + o.name + "'")) {
    // The library's warning said it, with the server's last error: once is enough.
  } else if (release_ec == dlock::errc::backend_unavailable) {
    print_error("could not release '" + o.name +
                "' (backend unreachable); the lease frees it within " +
                std::to_string((session.ttl().count() + 999) / 1000) + " s");
  } else if (release_ec == dlock::errc::lock_lost && !lost && lapsed_after_cmd) {
    print_error(m.held() + " outlived '" + o.command[0] +
                "', but its lease ran out before dlock could release it (dlock was stopped or "
                "starved past the TTL); the lock is free");
  } else if (release_ec == dlock::errc::lock_lost && !lost) {
    // CMD ended while the lock was held; then its lease ended before the release was confirmed
    // (a short TTL on an unreachable backend), or an operator ended the session: the lock is
    // free, but silence would hide that the backend was gone.
    print_error("could not confirm the release of '" + o.name +
                "': its lease ended first (backend unreachable?) or an operator ended its "
                "session; the lock is free");
  } else if (release_ec && !lost) {
    // A refusal (a ZooKeeper ACL without DELETE, a read-only server): the library's message
    // names the entry, the server's words and what became of the lock.
    print_error(detail(release_ec));
  }
  return status;
}

}  // namespace

}  // namespace dlock::cli
