// libFuzzer target: what MariaDB/MySQL sends back for the queue query, as the backend holds
// it after libmariadb's fetch (my::outcome: text cells or NULL), turned into entries;
// nothing may crash.
#include <chrono>

#include "backends/common/queue_rows.hpp"
#include "backends/mysql/my_conn.hpp"
#include "sql_cells.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  dlock::detail::my::outcome out;
  out.rows = dlock::fuzz::decode_cells(data, size);
  auto q =
      dlock::detail::rows_to_queue(out, out.rows.size(), std::chrono::steady_clock::now(), true);
  if (q.entries.size() != out.rows.size()) __builtin_trap();
  return 0;
}
