// The end of a fault run: the checker over the merged logs, fault -> next grant, orphans.
#include <algorithm>
#include <dlock/errors.hpp>
#include <system_error>
#include <thread>

#include "fault/checker.hpp"
#include "fault/fault_driver.hpp"
#include "support/fenced_register.hpp"

namespace dlock::fault {

using namespace std::chrono_literals;
using ms = std::chrono::milliseconds;

void judge(const judge_input& in, fault_backend& b, run_report& r) {
  auto note = [&](const std::string& s) { r.notes += "  " + s + "\n"; };
  history h;
  std::size_t torn = 0;
  for (auto& log : in.logs) torn += load_log(log, h.events);
  h.events.insert(h.events.end(), in.driver_events.begin(), in.driver_events.end());
  auto reg = test::fenced_register::open(in.reg_path);
  h.writes = reg.writes();
  h.final_value = reg.read();
  auto c = check(h, in.limit);
  r.sections = c.sections;
  r.refused = c.refused_writes + c.refused_reads;
  r.lost = c.lost_seen;
  r.violations = c.violations.size();
  for (auto& v : c.violations) {
    // The lock-level rules: what a backend that cannot survive a fault by design may break.
    // The resource-level ones (a stale write accepted, a lost update, ...) never may.
    bool lock_level = v.rule == "overlap" || v.rule == "held_after_regrant" ||
                      v.rule == "token_order" || v.rule == "fake_grant";
    if (!lock_level) ++r.resource_violations;
  }
  if (!c.violations.empty()) r.notes += describe(c.violations);
  // An acquire that ended backend_unavailable gave up on the server (the worker tries again),
  // and a release that ended with an error left its entry to the lease: during an outage
  // shorter than the lease, a waiter must ride it out and a release must go through after it.
  const auto unavailable = std::error_code(errc::backend_unavailable).message();
  for (auto& e : h.events) {
    bool gave_up = (e.what == step::acquire_failed && e.detail.starts_with(unavailable)) ||
                   (e.what == step::released && !e.detail.empty());
    if (!gave_up) continue;
    if (e.what == step::released && r.releases_may_wait) {
      ++r.late_releases;
      continue;
    }
    if (++r.gave_up <= 3 && r.keep_sessions)
      note(std::string(e.what == step::released ? "release" : "acquire") + " gave up: " + e.worker +
           ": " + e.detail);
  }
  if (torn > 1) note(std::to_string(torn) + " unparsable log lines");
  for (auto& [ns, who] : in.faults) {
    std::optional<std::int64_t> next;
    for (auto& e : h.events) {
      if (e.what == step::granted && e.ns > ns && e.worker != who && (!next || e.ns < *next))
        next = e.ns;
    }
    if (!next) {
      r.grant_missing = true;
      note("no grant after the fault at " + std::to_string(ns) + " ns on " +
           (who.empty() ? "the server" : who));
      continue;
    }
    auto d = std::chrono::duration_cast<ms>(std::chrono::nanoseconds{*next - ns});
    r.worst_to_grant = std::max(r.worst_to_grant.value_or(d), d);
  }
  if (!b.multi_process()) {
    r.orphans = in.in_process_orphans;
    return;
  }
  auto from = std::chrono::steady_clock::now();
  auto first = r.orphans = b.orphans(in.lock);
  while (r.orphans > 0 && std::chrono::steady_clock::now() < from + b.ttl() + 1s) {
    std::this_thread::sleep_for(100ms);
    r.orphans = b.orphans(in.lock);
  }
  if (first > 0) {
    note(std::to_string(first) + " entries of dead sessions right after the run, " +
         std::to_string(r.orphans) + " after " +
         std::to_string(
             std::chrono::duration_cast<ms>(std::chrono::steady_clock::now() - from).count()) +
         " ms");
  }
}

}  // namespace dlock::fault
