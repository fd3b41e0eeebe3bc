#pragma once
// What a backend lacks, said in one place for every caller that refuses it (a campaign and an
// observer, a permit's acquire): the reason its capabilities give, or where to look.

#include <dlock/session.hpp>
#include <string>

namespace dlock::detail {

// "has no shared locks (...)", to follow the backend's name.
std::string lacks_shared_locks();
// "has no elections: REASON", or a pointer to the README's table without a reason.
std::string lacks_elections(const backend_capabilities& caps);
// "has no semaphores: REASON", likewise.
std::string lacks_semaphores(const backend_capabilities& caps);

}  // namespace dlock::detail
