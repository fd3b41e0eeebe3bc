// dlock::diagnose: capabilities plus the backend's live checks, judged per guarantee.
#include "core/doctor.hpp"

#include <array>

#include "core/events.hpp"
#include "core/retry.hpp"
#include "core/session_core.hpp"

namespace dlock {

const char* to_string(check_status s) noexcept {
  switch (s) {
    case check_status::ok:
      return "ok";
    case check_status::weakened:
      return "weakened";
    case check_status::unsafe:
      return "unsafe";
    case check_status::unknown:
      return "unknown";
  }
  return "unknown";
}

const char* to_string(guarantee_status s) noexcept {
  switch (s) {
    case guarantee_status::holds:
      return "holds";
    case guarantee_status::weakened:
      return "weakened";
    case guarantee_status::no:
      return "no";
    case guarantee_status::unknown:
      return "unknown";
  }
  return "unknown";
}

const std::vector<std::string>& guarantee_names() {
  static const std::vector<std::string> names{"exclusion",   "fencing",   "failover",
                                              "loss-signal", "fifo",      "shared",
                                              "semaphores",  "elections", "interop"};
  return names;
}

namespace detail {
namespace {

struct baseline {
  const char* title;
  guarantee_status status;
  std::string why;
};

baseline baseline_of(std::string_view name, const capabilities& c) {
  auto yes_no = [](bool b) { return b ? guarantee_status::holds : guarantee_status::no; };
  if (name == "exclusion") {
    return {"mutual exclusion under a client crash", guarantee_status::holds,
            c.frees_dead_process_at_once
                ? "one holder at a time; a crashed holder's lock is freed once its process (or "
                  "connection) is gone, or when its lease ends"
                : "one holder at a time; a crashed holder's lock is freed only when its lease "
                  "ends"};
  }
  if (name == "fencing") {
    return {"fencing tokens survive a server restart", yes_no(c.durable_tokens),
            c.durable_tokens ? "tokens come from a counter the backend keeps durably"
                             : (c.scope == reach::process
                                    ? "tokens live in this process: they start again with it"
                                    : "tokens are not kept durably: they can start again")};
  }
  if (name == "failover") {
    if (c.scope != reach::network) {
      return {"locks and tokens survive a failover", guarantee_status::holds,
              "nothing fails over: the state lives on this host"};
    }
    return {"locks and tokens survive a failover", guarantee_status::unknown,
            "this backend checks no replication"};
  }
  if (name == "loss-signal") {
    return {"loss signalled before another grant", guarantee_status::holds,
            "a holder is told lost when its lease ends, before another can be granted (clock "
            "drift within 1% + 2 ms)"};
  }
  if (name == "fifo") {
    return {"first come, first served", yes_no(c.fifo),
            c.fifo ? "waiters are granted in arrival order"
                   : "the server's lock grants in no particular order"};
  }
  if (name == "shared") {
    return {"shared (reader) locks", yes_no(c.shared_locks),
            c.shared_locks ? "readers share, a queued writer is not overtaken"
                           : "shared acquires are refused (unsupported)"};
  }
  if (name == "semaphores") {
    return {"semaphores (N holders)", yes_no(c.permits),
            c.permits ? "permits are entries of one queue, each with its own token"
            : c.no_permits_because.empty() ? "acquiring a permit is refused (unsupported)"
                                           : "acquiring a permit is refused (unsupported): " +
                                                 std::string(c.no_permits_because)};
  }
  if (name == "elections") {
    return {"leader elections with a value", yes_no(c.values),
            c.values ? "candidates carry a value; changes wake observers"
            : c.no_values_because.empty()
                ? "campaigning and observing are refused (unsupported)"
                : "campaigning and observing are refused (unsupported): " +
                      std::string(c.no_values_because)};
  }
  return {"interoperates with other lock libraries", guarantee_status::no,
          "only dlock clients see these locks"};
}

int rank(guarantee_status s) {
  switch (s) {
    case guarantee_status::holds:
      return 0;
    case guarantee_status::unknown:
      return 1;
    case guarantee_status::weakened:
      return 2;
    case guarantee_status::no:
      return 3;
  }
  return 3;
}

guarantee_status from_check(check_status s) {
  switch (s) {
    case check_status::ok:
      return guarantee_status::holds;
    case check_status::weakened:
      return guarantee_status::weakened;
    case check_status::unsafe:
      return guarantee_status::no;
    case check_status::unknown:
      return guarantee_status::unknown;
  }
  return guarantee_status::unknown;
}

}  // namespace

std::vector<guarantee_verdict> judge(const capabilities& caps,
                                     const std::vector<check_finding>& findings) {
  std::vector<guarantee_verdict> out;
  for (const auto& name : guarantee_names()) {
    auto b = baseline_of(name, caps);
    guarantee_verdict v{name, b.title, b.status, b.why};
    // A recipe the backend lacks (fifo, shared, semaphores, elections) stays "no" whatever a
    // check says. Otherwise the checks that name the guarantee decide when there are any: the
    // worst wins and its reasons are the why; all ok, the first one's reason is.
    const bool capability_only =
        name == "fifo" || name == "shared" || name == "semaphores" || name == "elections";
    if (capability_only && v.status == guarantee_status::no) {
      out.push_back(std::move(v));
      continue;
    }
    bool spoken = false;
    std::string first_ok;
    std::string worse;
    auto worst = guarantee_status::holds;
    for (const auto& f : findings) {
      if (f.guarantee != name) continue;
      spoken = true;
      auto s = from_check(f.status);
      if (s == guarantee_status::holds) {
        if (first_ok.empty()) first_ok = f.reason;
        continue;
      }
      if (rank(s) > rank(worst)) worst = s;
      worse += (worse.empty() ? "" : "; ") + f.reason;
    }
    if (spoken) {
      v.status = worst;
      v.why = worse.empty() ? first_ok : worse;
    }
    out.push_back(std::move(v));
  }
  return out;
}

void log_findings(const std::shared_ptr<observer>& o, const std::vector<check_finding>& findings) {
  for (const auto& f : findings) {
    if (f.status == check_status::ok) continue;
    auto level = f.status == check_status::unknown ? log_level::info : log_level::warning;
    std::string text = f.check + " " + to_string(f.status);
    if (!f.guarantee.empty()) text += " (" + f.guarantee + ")";
    text += ": " + f.reason;
    emit(o, [&](observer& obs) { obs.on_log(level, text); });
  }
}

}  // namespace detail

std::string guarantee_title(std::string_view name) {
  if (std::ranges::find(guarantee_names(), name) == guarantee_names().end()) return {};
  return detail::baseline_of(name, {}).title;
}

diagnosis diagnose(const session& s) {
  if (!s) {
    throw system_error(make_error_code(errc::invalid_argument),
                       "dlock: diagnose on an empty session");
  }
  auto& core = *s.core();
  auto until = std::chrono::steady_clock::now() + core.options().request_timeout;
  auto checks = detail::with_retry(core.options().retry, until, {},
                                   [&] { return core.backend().diagnose(); });
  if (!checks) detail::raise(checks.error(), "dlock: diagnose " + s.url());
  diagnosis d;
  d.checks = std::move(*checks);
  d.guarantees = detail::judge(s.capabilities(), d.checks);
  return d;
}

}  // namespace dlock
