#include "backends/sqlite/sqlite_rows.hpp"

#include <algorithm>

#include "backends/common/wire_time.hpp"

namespace dlock::detail::sqlite {

queue_row read_queue_row(const stmt& s) {
  return {s.text(0),
          s.i64(1),
          s.i64(2),
          s.i64(3),
          s.text(4),
          s.text(5),
          {s.text(6), s.i64(7), s.i64(8)},
          s.i64(9),
          s.blob(10),
          s.i64(11)};
}

entry row_entry(const queue_row& r, std::int64_t now_ms) {
  entry e;
  e.id = r.id;
  // Only 0 and 1 are ever stored; anything else is read as the safer exclusive kind.
  e.kind = r.kind == 1 ? entry_kind::shared : entry_kind::exclusive;
  e.token = static_cast<std::uint64_t>(r.token);
  e.owner = r.owner;
  e.since = unix_ms_time(r.created_ms);
  // The caller checked lease_runs, so this neither overflows nor goes negative.
  e.lease_left = std::chrono::milliseconds{r.expires_ms - now_ms};
  e.value = r.value;
  e.version = static_cast<std::uint64_t>(std::max<std::int64_t>(r.version, 0));
  return e;
}

}  // namespace dlock::detail::sqlite
