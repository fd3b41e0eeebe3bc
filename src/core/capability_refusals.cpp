#include "core/capability_refusals.hpp"

namespace dlock::detail {

std::string lacks_shared_locks() {
  return "has no shared locks (its capabilities); see its page in docs/ for a mode that has them";
}

std::string lacks_elections(const backend_capabilities& caps) {
  if (!caps.no_values_because.empty()) {
    return "has no elections: " + std::string(caps.no_values_because);
  }
  return "has no elections (its entries carry no values: its capabilities); see the README's "
         "backend table for those that have";
}

std::string lacks_semaphores(const backend_capabilities& caps) {
  if (!caps.no_permits_because.empty()) {
    return "has no semaphores: " + std::string(caps.no_permits_because);
  }
  return "has no semaphores (its capabilities); see the README's backend table for those that "
         "have";
}

}  // namespace dlock::detail
