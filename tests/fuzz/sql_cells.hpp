#pragma once
// Fuzz bytes as rows of SQL text cells, the shape the SQL backends' queue queries return:
//   (id, kind, token, created_unix_ms, owner, lease_left_ms)
// Each cell is a length byte (0xff: NULL) and that many bytes (length % 64).

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace dlock::fuzz {

inline constexpr int queue_columns = 8;  // with the value and its version

using cell_rows = std::vector<std::vector<std::optional<std::string>>>;

inline cell_rows decode_cells(const std::uint8_t* p, std::size_t n, std::size_t max_rows = 16) {
  cell_rows rows;
  std::vector<std::optional<std::string>> row;
  while (n > 0 && rows.size() < max_rows) {
    std::uint8_t len = *p++;
    --n;
    if (len == 0xff) {
      row.emplace_back();
    } else {
      std::size_t k = len % 64;
      if (k > n) break;
      row.emplace_back(std::string(reinterpret_cast<const char*>(p), k));
      p += k;
      n -= k;
    }
    if (row.size() == queue_columns) rows.push_back(std::exchange(row, {}));
  }
  return rows;
}

}  // namespace dlock::fuzz
