// dlock_fault_run: every backend x fault of backend_table(), each a bounded run of several
// worker processes under the history checker, then a report table. Exit status 1 if any run
// saw a violation, an orphan, a worker error, a missed injection or a fault after which the
// next grant took longer than TTL + 1 s.
//
//   dlock_fault_run [--backend NAME] [--fault NAME]
// Environment: DLOCK_SOAK=1 for long runs; DLOCK_FAULT_LOGS=DIR keeps the logs of failed runs.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "fault/fault_driver.hpp"
#include "support/net.hpp"

using namespace dlock::fault;
using namespace std::chrono_literals;

namespace {

void print_row(const run_report& r) {
  std::string grant = r.worst_to_grant ? std::to_string(r.worst_to_grant->count()) + " ms" : "-";
  std::printf("%-8s %-19s %6zu %8zu %5zu %5zu %8zu %6d/%-3d %11s %8lld ms %7.1f s  %s\n",
              r.backend.c_str(), to_string(r.what), r.sections, r.refused, r.lost, r.violations,
              r.orphans, r.injected, r.planned, grant.c_str(),
              static_cast<long long>(r.bound.count()), r.took.count() / 1000.0,
              !r.ok()               ? "FAIL"
              : r.by_design.empty() ? "ok"
                                    : "by design");
  std::fflush(stdout);
}

// Copies a failed run's logs and register to $DLOCK_FAULT_LOGS/<backend>-<fault>/.
void keep_logs(const std::string& from, const char* to, const std::string& backend, fault f) {
  std::string name = backend + "-" + to_string(f);
  for (auto& ch : name) {
    if (ch == ' ') ch = '_';
  }
  auto dest = std::filesystem::path(to) / name;
  std::error_code ec;
  std::filesystem::create_directories(dest, ec);
  std::filesystem::copy(
      from, dest,
      std::filesystem::copy_options::recursive | std::filesystem::copy_options::overwrite_existing,
      ec);
  std::printf("  logs kept in %s%s\n", dest.c_str(), ec ? (" (" + ec.message() + ")").c_str() : "");
}

void print_header() {
  std::printf("%-8s %-19s %6s %8s %5s %5s %8s %10s %11s %11s %9s  %s\n", "backend", "fault", "CS",
              "refused", "lost", "viol", "orphans", "injected", "fault->grant", "bound", "took",
              "result");
}

}  // namespace

int main(int argc, char** argv) {
  std::string only_backend, only_fault;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--backend")
      only_backend = argv[i + 1];
    else if (a == "--fault")
      only_fault = argv[i + 1];
  }
  const char* soak_env = std::getenv("DLOCK_SOAK");
  bool soak = soak_env && std::string(soak_env) == "1";
  const char* keep = std::getenv("DLOCK_FAULT_LOGS");  // where to keep logs of failed runs
  run_params p;
  p.worker_exe = DLOCK_FAULT_WORKER;
  p.workers = 4;
  // Bounded for `make test` (about 5 minutes for every backend on 2 cores); DLOCK_SOAK=1 for
  // the long run.
  p.injections = soak ? 20 : 2;
  p.min_duration = soak ? 60s : 2s;
  std::printf("dlock fault run: %d workers, %d injections per fault%s\n", p.workers, p.injections,
              soak ? " (soak)" : "");

  std::vector<run_report> reports;
  for (auto& row : backend_table()) {
    if (!only_backend.empty() && row.name != only_backend) continue;
    dlock::test::temp_dir dir("dlock-fault-" + row.name);
    std::unique_ptr<fault_backend> b;
    try {
      b = row.make(dir.path());
    } catch (const std::exception& e) {
      std::printf("%s: cannot start the backend: %s\n", row.name.c_str(), e.what());
      return 1;
    }
    int n = 0;
    for (auto f : row.faults) {
      if (!only_fault.empty() && to_string(f) != only_fault) continue;
      dlock::test::temp_dir run_dir("dlock-fault-run");
      p.scratch_dir = run_dir.path();
      if (needs_proxy(f) && b->server_ports().empty()) {
        std::printf("%s: fault '%s' needs a server port\n", row.name.c_str(), to_string(f));
        return 1;
      }
      std::printf("-- %s / %s\n", row.name.c_str(), to_string(f));
      std::fflush(stdout);
      auto why = row.by_design.contains(f) ? row.by_design.at(f) : std::string{};
      reports.push_back(run_one(*b, row.name, f, p, why));
      if (!reports.back().notes.empty()) std::printf("%s", reports.back().notes.c_str());
      if (!reports.back().ok() && keep) keep_logs(run_dir.path(), keep, row.name, f);
      ++n;
    }
  }

  std::printf("\n");
  print_header();
  bool ok = !reports.empty();
  for (auto& r : reports) {
    print_row(r);
    ok = ok && r.ok();
  }
  for (auto& r : reports) {
    if (!r.by_design.empty())
      std::printf("\nby design: %s / %s: %s\n", r.backend.c_str(), to_string(r.what),
                  r.by_design.c_str());
  }
  std::printf("\n%s: %zu runs, %s\n", ok ? "PASS" : "FAIL", reports.size(),
              ok ? "0 violations, 0 orphans (outside the by-design rows)" : "see FAIL rows above");
  // Last, so that a CI page showing only a log's tail still shows why.
  for (auto& r : reports) {
    if (r.ok()) continue;
    std::printf("why FAIL %s / %s (worker errors %d, workers lost %d, injected %d/%d):\n",
                r.backend.c_str(), to_string(r.what), r.worker_errors, r.workers_lost, r.injected,
                r.planned);
    // The first lines of its notes: a hung worker's stacks can run long.
    std::size_t at = 0;
    for (int n = 0; n < 12 && at < r.notes.size(); ++n) {
      auto end = r.notes.find('\n', at);
      if (end == std::string::npos) end = r.notes.size();
      std::printf("%s\n", r.notes.substr(at, end - at).c_str());
      at = end + 1;
    }
  }
  return ok ? 0 : 1;
}
