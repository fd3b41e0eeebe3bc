#pragma once
// A backend session that reports every request it forwards (operation, latency, error) to an
// observer: the cross-cutting concern is a decorator, so no backend knows about events, and a
// session without an observer does not have this layer at all.

#include <dlock/observer.hpp>
#include <memory>

#include "core/backend.hpp"

namespace dlock::detail {

// Wraps `inner`; `o` must not be null.
std::unique_ptr<backend_session> observe_requests(std::unique_ptr<backend_session> inner,
                                                  std::shared_ptr<observer> o);

}  // namespace dlock::detail
