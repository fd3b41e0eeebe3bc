// MySQL/MariaDB: INSERT + DELETE of one row (autocommit, InnoDB: two durable writes).
// Contended: GET_LOCK / RELEASE_LOCK, the server's own blocking named lock.
#include <mysql.h>

#include <stdexcept>

#include "floor_common.hpp"

namespace dlock::floor {
namespace {

class mysql_client final : public client {
 public:
  explicit mysql_client(const target& t) {
    c_ = mysql_init(nullptr);
    unsigned timeout = 5;
    mysql_options(c_, MYSQL_OPT_CONNECT_TIMEOUT, &timeout);
    if (!mysql_real_connect(c_, t.host.c_str(), t.user.empty() ? "root" : t.user.c_str(),
                            t.password.empty() ? nullptr : t.password.c_str(),
                            t.path.empty() ? nullptr : t.path.c_str(),
                            static_cast<unsigned>(t.port ? t.port : 3306), nullptr, 0)) {
      std::string m = mysql_error(c_);
      mysql_close(c_);
      throw std::runtime_error("mysql: " + m);
    }
    exec("CREATE TABLE IF NOT EXISTS dlock_floor (name VARCHAR(255) PRIMARY KEY) ENGINE=InnoDB");
    exec("DELETE FROM dlock_floor");
  }
  ~mysql_client() override { mysql_close(c_); }
  void cycle() override {
    exec("INSERT INTO dlock_floor (name) VALUES ('x')");
    exec("DELETE FROM dlock_floor WHERE name = 'x'");
  }
  bool has_blocking() const override { return true; }
  void acquire() override { query("SELECT GET_LOCK('dlock-floor', 10)"); }
  void release() override { query("SELECT RELEASE_LOCK('dlock-floor')"); }
  std::string what() const override {
    return "libmariadb: INSERT + DELETE; contended: GET_LOCK / RELEASE_LOCK";
  }

 private:
  void exec(const char* sql) {
    if (mysql_query(c_, sql) != 0)
      throw std::runtime_error(std::string("mysql: ") + mysql_error(c_));
  }
  void query(const char* sql) {
    exec(sql);
    MYSQL_RES* r = mysql_store_result(c_);
    MYSQL_ROW row = r ? mysql_fetch_row(r) : nullptr;
    bool ok = row && row[0] && row[0][0] == '1';
    if (r) mysql_free_result(r);
    if (!ok) throw std::runtime_error(std::string("mysql: ") + sql + " did not return 1");
  }
  MYSQL* c_{nullptr};
};

}  // namespace

std::unique_ptr<client> make_mysql(const target& t) { return std::make_unique<mysql_client>(t); }

}  // namespace dlock::floor
