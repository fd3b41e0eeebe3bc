#pragma once
// One fault run: W worker processes contend for one lock on one backend while the driver
// injects a fault several times; then the checker judges the merged logs and the backend is
// inspected raw for orphans.

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "fault/fault_backends.hpp"
#include "fault/history.hpp"

namespace dlock::fault {

struct run_params {
  std::string worker_exe;
  std::string scratch_dir;  // logs and the register go here
  int workers{4};
  int injections{3};
  std::chrono::milliseconds min_duration{std::chrono::seconds{3}};
};

struct run_report {
  std::string backend;
  fault what{fault::none};
  std::size_t sections{0};
  std::size_t refused{0};  // stale reads and writes the fenced register refused
  std::size_t violations{0};
  std::size_t resource_violations{0};  // of which the fenced resource was harmed (or a log lied)
  std::size_t orphans{0};
  std::size_t lost{0};  // sections that ended by the holder seeing its loss
  int injected{0};      // faults actually injected
  int planned{0};
  int worker_errors{0};  // workers that exited on an error of their own
  int workers_lost{0};   // workers that exited because their hold or session was lost
  // Acquires that ended backend_unavailable (the worker then tries again) and releases that
  // ended with an error (the entry is left to its lease).
  int gave_up{0};
  // proxy_outage where sessions_survive_reconnect(), and member_freeze: the fault must cost
  // nothing (no hold or session lost, no acquire or release given up).
  bool keep_sessions{false};
  // member_freeze where a commit needs the frozen leader (or its successor): a release then
  // waits for an election, longer than release_timeout, and goes on in the background. Such
  // releases are counted here, not in gave_up; the orphan check still sees their entries go.
  bool releases_may_wait{false};
  int late_releases{0};
  std::optional<std::chrono::milliseconds> worst_to_grant;  // fault -> next grant
  std::chrono::milliseconds bound{0};                       // TTL + 1 s
  bool grant_missing{false};  // a fault after which nobody was granted within the bound
  std::string by_design;      // non-empty: a fault this backend cannot survive, and why
  std::string notes;          // violations and anything else worth reading
  std::chrono::milliseconds took{0};

  bool ok() const;
};

// `by_design`: the reason this backend cannot survive `f` (empty if it must). The backend runs
// the cell with cell_ttl(f, backend), restored after.
run_report run_one(fault_backend& backend, const std::string& backend_name, fault f,
                   const run_params& p, const std::string& by_design = {});

// The judging part of a run (fault_judge.cpp).
struct judge_input {
  std::vector<std::string> logs;  // every worker's log
  std::vector<event> driver_events;
  std::string reg_path;
  std::vector<std::pair<std::int64_t, std::string>> faults;  // when, and which worker ("" all)
  std::string lock;
  std::size_t in_process_orphans{0};
  std::uint32_t limit{1};  // holders allowed at once (a semaphore's permits)
};
void judge(const judge_input& in, fault_backend& b, run_report& r);

}  // namespace dlock::fault
