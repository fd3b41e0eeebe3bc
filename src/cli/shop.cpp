#include "cli/shop.hpp"

#include <stdexcept>

namespace dlock::cli {
namespace {

constexpr const char* schema = R"sql(
DROP TABLE IF EXISTS stock;
DROP TABLE IF EXISTS sales;
DROP TABLE IF EXISTS refusals;
DROP TABLE IF EXISTS workers;
CREATE TABLE stock(id INTEGER PRIMARY KEY CHECK (id = 1), initial INTEGER NOT NULL,
                   qty INTEGER NOT NULL, last_token INTEGER NOT NULL);
CREATE TABLE sales(id INTEGER PRIMARY KEY AUTOINCREMENT, worker INTEGER NOT NULL,
                   token INTEGER NOT NULL, new_qty INTEGER NOT NULL, wait_us INTEGER NOT NULL);
CREATE TABLE refusals(id INTEGER PRIMARY KEY AUTOINCREMENT, worker INTEGER NOT NULL,
                      token INTEGER NOT NULL, last_token INTEGER NOT NULL);
CREATE TABLE workers(worker INTEGER PRIMARY KEY, acquisitions INTEGER NOT NULL,
                     status INTEGER NOT NULL);
)sql";

// A prepared statement that finalizes itself.
class statement {
 public:
  statement(sqlite3* db, const char* sql, const std::string& path) : db_(db) {
    if (sqlite3_prepare_v2(db, sql, -1, &s_, nullptr) != SQLITE_OK) {
      throw std::runtime_error("shop '" + path + "': " + sqlite3_errmsg(db));
    }
  }
  ~statement() { sqlite3_finalize(s_); }
  statement(const statement&) = delete;
  statement& operator=(const statement&) = delete;

  statement& bind(int i, long long v) {
    sqlite3_bind_int64(s_, i, v);
    return *this;
  }
  // True while there is a row.
  bool step() {
    int rc = sqlite3_step(s_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    throw std::runtime_error(std::string("shop: ") + sqlite3_errmsg(db_));
  }
  long long column(int i) { return sqlite3_column_int64(s_, i); }

 private:
  sqlite3* db_;
  sqlite3_stmt* s_{nullptr};
};

}  // namespace

shop::shop(const std::string& path) : path_(path) {
  int rc = sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr);
  if (rc != SQLITE_OK) {
    std::string msg = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
    sqlite3_close_v2(db_);
    db_ = nullptr;
    throw std::runtime_error("cannot open shop database '" + path + "': " + msg);
  }
  // Many writers: wait for the write lock rather than fail with SQLITE_BUSY.
  sqlite3_busy_timeout(db_, 10'000);
  exec("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;");
}

shop::~shop() { sqlite3_close_v2(db_); }

void shop::exec(const char* sql) {
  char* err = nullptr;
  if (sqlite3_exec(db_, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err ? err : sqlite3_errmsg(db_);
    sqlite3_free(err);
    throw std::runtime_error("shop '" + path_ + "': " + msg);
  }
}

void shop::reset(long long stock) {
  exec("BEGIN IMMEDIATE");
  try {
    exec(schema);
    statement(db_, "INSERT INTO stock(id, initial, qty, last_token) VALUES (1, ?1, ?1, 0)", path_)
        .bind(1, stock)
        .step();
    exec("COMMIT");
  } catch (...) {
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }
}

long long shop::read_stock(std::uint64_t token) {
  if (token == 0) {
    statement s(db_, "SELECT qty FROM stock WHERE id = 1", path_);
    if (!s.step()) throw std::runtime_error("shop '" + path_ + "': no stock row");
    return s.column(0);
  }
  exec("BEGIN IMMEDIATE");
  try {
    statement(db_, "UPDATE stock SET last_token = MAX(last_token, ?1) WHERE id = 1", path_)
        .bind(1, static_cast<long long>(token))
        .step();
    statement s(db_, "SELECT qty FROM stock WHERE id = 1", path_);
    if (!s.step()) throw std::runtime_error("shop '" + path_ + "': no stock row");
    const long long qty = s.column(0);
    exec("COMMIT");
    return qty;
  } catch (...) {
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }
}

bool shop::sell(long long new_stock, std::uint64_t token, int worker, long long wait_us) {
  auto t = static_cast<long long>(token);
  exec("BEGIN IMMEDIATE");
  try {
    statement last(db_, "SELECT last_token FROM stock WHERE id = 1", path_);
    last.step();
    long long last_token = last.column(0);
    bool accepted = t >= last_token;
    if (accepted) {
      statement(db_, "UPDATE stock SET qty = ?1, last_token = ?2 WHERE id = 1", path_)
          .bind(1, new_stock)
          .bind(2, t)
          .step();
      statement(db_, "INSERT INTO sales(worker, token, new_qty, wait_us) VALUES (?1, ?2, ?3, ?4)",
                path_)
          .bind(1, worker)
          .bind(2, t)
          .bind(3, new_stock)
          .bind(4, wait_us)
          .step();
    } else {
      statement(db_, "INSERT INTO refusals(worker, token, last_token) VALUES (?1, ?2, ?3)", path_)
          .bind(1, worker)
          .bind(2, t)
          .bind(3, last_token)
          .step();
    }
    exec("COMMIT");
    return accepted;
  } catch (...) {
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }
}

void shop::record_worker(int worker, long long acquisitions, int exit_status) {
  statement(db_, "INSERT OR REPLACE INTO workers(worker, acquisitions, status) VALUES (?1, ?2, ?3)",
            path_)
      .bind(1, worker)
      .bind(2, acquisitions)
      .bind(3, exit_status)
      .step();
}

shop_totals shop::totals() {
  shop_totals t;
  statement stock(db_, "SELECT initial, qty FROM stock WHERE id = 1", path_);
  if (stock.step()) {
    t.initial = stock.column(0);
    t.left = stock.column(1);
  }
  statement counts(db_,
                   "SELECT (SELECT count(*) FROM sales), (SELECT count(*) FROM refusals), "
                   "(SELECT COALESCE(sum(acquisitions), 0) FROM workers)",
                   path_);
  counts.step();
  t.sold = counts.column(0);
  t.refused = counts.column(1);
  t.acquisitions = counts.column(2);
  statement waits(db_, "SELECT wait_us FROM sales ORDER BY wait_us", path_);
  while (waits.step()) t.waits.push_back(waits.column(0));
  return t;
}

}  // namespace dlock::cli
