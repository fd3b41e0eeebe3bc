#pragma once
// dlock::diagnose's parts the engine also uses at open: judging guarantees from capabilities
// and findings, and reporting weakening findings to the session's observer.

#include <dlock/doctor.hpp>
#include <memory>
#include <vector>

#include "core/backend.hpp"

namespace dlock::detail {

// One verdict per guarantee_names(): the capability's baseline, then the worst finding that
// names the guarantee.
std::vector<guarantee_verdict> judge(const capabilities& caps,
                                     const std::vector<check_finding>& findings);

// Each weakened or unsafe finding as a warning, each unknown one as info, to the observer.
void log_findings(const std::shared_ptr<observer>& o, const std::vector<check_finding>& findings);

}  // namespace dlock::detail
