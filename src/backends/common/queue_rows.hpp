#pragma once
// The SQL backends return a lock's queue as rows of the same shape:
//   (id, kind, token, created_unix_ms, owner, lease_left_ms[, value, version])
// in queue order. One conversion for all of them. The value is read as the driver gives it
// (raw bytes, or an encoding the backend then decodes).

#include <chrono>
#include <cstddef>

#include "backends/common/wire_time.hpp"
#include "core/backend.hpp"

namespace dlock::detail {

// Rows: anything with text(row, col) and i64(row, col).
template <class Rows>
queue_view rows_to_queue(const Rows& rows, std::size_t count, steady::time_point sent,
                         bool with_values = false) {
  using std::chrono::milliseconds;
  queue_view v;
  v.sent_at = sent;
  v.entries.reserve(count);
  for (std::size_t i = 0; i < count; ++i) {
    entry e;
    e.id = rows.text(i, 0);
    e.kind = rows.i64(i, 1) == 1 ? entry_kind::shared : entry_kind::exclusive;
    e.token = static_cast<std::uint64_t>(rows.i64(i, 2));
    e.since = unix_ms_time(rows.i64(i, 3));
    e.owner = rows.text(i, 4);
    e.lease_left = milliseconds{rows.i64(i, 5)};
    if (with_values) {
      e.value = rows.text(i, 6);
      e.version = static_cast<std::uint64_t>(rows.i64(i, 7));
    }
    v.entries.push_back(std::move(e));
  }
  return v;
}

}  // namespace dlock::detail
