#pragma once
// Reporting to a session's observer (include/dlock/observer.hpp): one null check when none is
// installed; an exception from the observer never reaches the operation it describes.

#include <dlock/observer.hpp>
#include <memory>
#include <utility>

namespace dlock::detail {

template <class F>
void emit(const std::shared_ptr<observer>& o, F&& call) noexcept {
  if (!o) return;
  try {
    std::forward<F>(call)(*o);
  } catch (...) {
  }
}

}  // namespace dlock::detail
