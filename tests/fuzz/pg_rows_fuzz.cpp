// libFuzzer target: what PostgreSQL sends back for the queue query. The bytes become the
// cells (text or NULL) of a real PGresult, built with libpq's own result constructors, which
// the backend reads through pg::rows and turns into entries; nothing may crash.
#include <libpq-fe.h>

#include <chrono>

#include "backends/common/queue_rows.hpp"
#include "backends/postgres/pg_conn.hpp"
#include "sql_cells.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto cells = dlock::fuzz::decode_cells(data, size);
  PGresult* res = PQmakeEmptyPGresult(nullptr, PGRES_TUPLES_OK);
  if (!res) return 0;
  char names[dlock::fuzz::queue_columns][3] = {"c0", "c1", "c2", "c3", "c4", "c5", "c6", "c7"};
  PGresAttDesc attrs[dlock::fuzz::queue_columns]{};
  for (int c = 0; c < dlock::fuzz::queue_columns; ++c) {
    attrs[c].name = names[c];
    attrs[c].typid = 25;  // text
    attrs[c].typlen = -1;
    attrs[c].atttypmod = -1;
  }
  if (!PQsetResultAttrs(res, dlock::fuzz::queue_columns, attrs)) {
    PQclear(res);
    return 0;
  }
  for (std::size_t r = 0; r < cells.size(); ++r) {
    for (int c = 0; c < dlock::fuzz::queue_columns; ++c) {
      const auto& v = cells[r][c];
      // NULL is length -1; PQsetvalue copies the bytes.
      PQsetvalue(res, static_cast<int>(r), c, v ? const_cast<char*>(v->data()) : nullptr,
                 v ? static_cast<int>(v->size()) : -1);
    }
  }
  dlock::detail::pg::rows rows(res);  // owns res from here
  auto q = dlock::detail::rows_to_queue(rows, static_cast<std::size_t>(rows.count()),
                                        std::chrono::steady_clock::now(), true);
  if (q.entries.size() != cells.size()) __builtin_trap();
  return 0;
}
