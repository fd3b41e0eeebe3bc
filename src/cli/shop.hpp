#pragma once
// The flash-sale demo's shop: a SQLite database of its own (not the lock database) holding
// the stock, the sales and the writes it refused. It is the "resource" of Kleppmann's
// fencing argument: it accepts a write only if the writer's fencing token is not lower
// than the last one it accepted, checked and updated in one transaction.

#include <sqlite3.h>

#include <cstdint>
#include <string>
#include <vector>

namespace dlock::cli {

struct shop_totals {
  long long initial{0};
  long long left{0};
  long long sold{0};
  long long refused{0};
  long long acquisitions{0};     // lock grants (or, without the lock, sale attempts)
  std::vector<long long> waits;  // µs each sale waited for the lock
};

class shop {
 public:
  // Opens (creating) the database; throws std::runtime_error naming the path.
  explicit shop(const std::string& path);
  ~shop();
  shop(const shop&) = delete;
  shop& operator=(const shop&) = delete;

  // Empties the shop and puts `stock` units on the shelf.
  void reset(long long stock);
  // The stock level, read by the holder of `token`. The read raises the shop's fence to the
  // token (0: no lock, no fence): a read-modify-write is safe only if the resource sees the
  // token on the read too, or a holder paused between its read and its write could still
  // write before its successor does, both selling the same unit.
  long long read_stock(std::uint64_t token);
  // Writes the new stock level and records the sale, unless `token` is lower than the last
  // accepted one (then records a refusal). Returns whether the write was accepted.
  bool sell(long long new_stock, std::uint64_t token, int worker, long long wait_us);
  // Called once by each worker at the end.
  void record_worker(int worker, long long acquisitions, int exit_status);
  shop_totals totals();

 private:
  void exec(const char* sql);
  sqlite3* db_{nullptr};
  std::string path_;
};

}  // namespace dlock::cli
