#include "core/backend.hpp"

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <mutex>

namespace dlock::detail {

std::string backend_session::entry_id(std::string_view session_id, std::uint64_t n) const {
  char buf[24];
  std::snprintf(buf, sizeof buf, "%llx", static_cast<unsigned long long>(n));
  return std::string(session_id) + "-" + buf;
}

result<void> backend_session::wait_any(std::string_view lock, std::span<const entry> awaited,
                                       steady::time_point deadline, std::stop_token stop) {
  if (awaited.empty()) return {};
  if (awaited.size() == 1) return wait(lock, awaited.front(), deadline, std::move(stop));
  // Each entry in turn for a slice that grows to a cap: a wait that ends before its slice
  // did may mean that entry left, so the engine looks again.
  auto slice = std::chrono::milliseconds{20};
  for (std::size_t i = 0; !stop.stop_requested() && steady::now() < deadline; ++i) {
    auto until = std::min(deadline, steady::now() + slice);
    auto r = wait(lock, awaited[i % awaited.size()], until, stop);
    if (!r) return r;
    if (steady::now() < until) return {};
    if (i % awaited.size() == awaited.size() - 1)
      slice = std::min(slice * 2, std::chrono::milliseconds{500});
  }
  return {};
}

result<void> backend_session::wait_change(std::string_view lock, const queue_view& seen,
                                          steady::time_point deadline, std::stop_token stop) {
  auto until = std::min(deadline, steady::now() + std::chrono::milliseconds{250});
  if (!seen.entries.empty()) return wait(lock, seen.entries.front(), until, std::move(stop));
  std::mutex mu;
  std::condition_variable_any cv;
  std::unique_lock lk(mu);
  cv.wait_until(lk, stop, until, [] { return false; });
  return {};
}

}  // namespace dlock::detail
