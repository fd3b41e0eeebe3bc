#pragma once
// One fault run: W worker processes contend for one lock on one backend while the driver
// injects a fault several times; then the checker judges the merged logs and the backend is
// inspected raw for orphans.

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>

#include "fault/fault_backends.hpp"

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
  std::size_t orphans{0};
  std::size_t lost{0};  // sections that ended by the holder seeing its loss
  int injected{0};      // faults actually injected
  int planned{0};
  int worker_errors{0};  // workers that exited on an error of their own
  std::optional<std::chrono::milliseconds> worst_to_grant;  // fault -> next grant
  std::chrono::milliseconds bound{0};                       // TTL + 1 s
  bool grant_missing{false};  // a fault after which nobody was granted within the bound
  std::string notes;          // violations and anything else worth reading
  std::chrono::milliseconds took{0};

  bool ok() const;
};

run_report run_one(fault_backend& backend, const std::string& backend_name, fault f,
                   const run_params& p);

}  // namespace dlock::fault
