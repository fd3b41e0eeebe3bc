// The course of one fault run: start the workers, inject the fault several times, stop them,
// judge; and what makes a run pass.
#include "fault/fault_driver.hpp"

#include "fault/fault_run_state.hpp"
#include "support/fenced_register.hpp"

namespace dlock::fault {
namespace driver {

run::run(fault_backend& b, std::string name, fault f, const run_params& p, std::string by_design)
    : b_(b), f_(f), p_(p), lock_("fault/" + name + "/" + test::random_suffix()) {
  r_.backend = std::move(name);
  r_.by_design = std::move(by_design);
  r_.what = f;
  r_.bound = b.ttl() + 1s + (f == fault::member_kill ? b.leader_election() : 0ms);
  // The delay lasts a TTL, and a request sent just before it ends still takes a delayed round
  // trip (TTL/4 each way) after it: a CI run's grant came 3.5 s after a 2 s delay began.
  if (f == fault::proxy_delay) r_.bound += b.ttl() / 2;
  r_.keep_sessions =
      (f == fault::proxy_outage && b.sessions_survive_reconnect()) || f == fault::member_freeze;
  r_.releases_may_wait = f == fault::member_freeze && b.commits_need_a_leader();
  r_.planned = f == fault::none ? 0 : p.injections;
  slots_.resize(b.multi_process() ? static_cast<std::size_t>(p.workers) : 1);
  reg_path_ = p.scratch_dir + "/register.db";
}

run_report run::go() {
  auto t0 = steady::now();
  (void)test::fenced_register::open(reg_path_);  // created before any worker races to it
  if (needs_proxy(f_)) {
    proxies_.resize(slots_.size());
    for (auto& per_worker : proxies_) {
      for (auto port : b_.server_ports())
        per_worker.push_back(std::make_unique<test::tcp_proxy>(port));
    }
  }
  for (std::size_t i = 0; i < slots_.size(); ++i) start_worker(i);
  pump(500ms);
  for (int k = 0; k < r_.planned; ++k) {
    if (inject(k)) ++r_.injected;
    pump(300ms);
  }
  while (steady::now() < t0 + p_.min_duration) pump(50ms);
  stop_all();
  judge_input in{{},    std::move(driver_events_), reg_path_,          faults_,
                 lock_, in_process_orphans_,       holders_allowed(f_)};
  for (auto& w : all_) in.logs.push_back(w.log);
  judge(in, b_, r_);
  if (r_.keep_sessions && (r_.lost > 0 || r_.workers_lost > 0 || r_.gave_up > 0)) {
    note(std::string("the ") + (f_ == fault::member_freeze ? "frozen member" : "outage") +
         " was not ridden out: " + std::to_string(r_.lost) + " holds lost, " +
         std::to_string(r_.workers_lost) + " workers lost their session, " +
         std::to_string(r_.gave_up) + " acquires or releases gave up");
  }
  if (r_.late_releases > 0)
    note(std::to_string(r_.late_releases) +
         " releases waited for a leader past release_timeout (confirmed in the background)");
  r_.orphans += stray_entries_;
  if (f_ == fault::cancel_wait) note("cancelled waits: " + std::to_string(cancelled_waits_));
  r_.took = std::chrono::duration_cast<ms>(steady::now() - t0);
  return std::move(r_);
}

}  // namespace driver

bool run_report::ok() const {
  // A fault the backend cannot survive by design: the run only has to show what happened,
  // and that new sessions work afterwards.
  // The lock may break (overlap, late loss signal, tokens restarting); the fence must not.
  if (!by_design.empty()) return resource_violations == 0 && sections > 0 && orphans == 0;
  // A wall-clock step must cost nothing: leases and deadlines do not follow the wall clock.
  if (what == fault::client_clock_step && (lost > 0 || workers_lost > 0)) return false;
  // An outage shorter than the lease must cost nothing where a session outlives its
  // connection: no hold or session lost, no acquire that gave up on the unreachable server.
  if (keep_sessions && (lost > 0 || workers_lost > 0 || gave_up > 0)) return false;
  return violations == 0 && orphans == 0 && worker_errors == 0 && injected == planned &&
         !grant_missing && sections > 0 && (!worst_to_grant || *worst_to_grant <= bound);
}

run_report run_one(fault_backend& backend, const std::string& backend_name, fault f,
                   const run_params& p, const std::string& by_design) {
  struct ttl_for_the_cell {
    fault_backend& b;
    std::chrono::milliseconds was;
    ~ttl_for_the_cell() { b.set_ttl(was); }
  } restore{backend, backend.ttl()};
  backend.set_ttl(cell_ttl(f, backend));
  return driver::run(backend, backend_name, f, p, by_design).go();
}

}  // namespace dlock::fault
