// PostgreSQL: pg_advisory_lock + pg_advisory_unlock on one session; the blocking advisory
// lock is also the contended floor (the server queues the waiters).
#include <libpq-fe.h>

#include <stdexcept>

#include "floor_common.hpp"

namespace dlock::floor {
namespace {

class pg_client final : public client {
 public:
  explicit pg_client(const target& t) {
    std::string port = std::to_string(t.port ? t.port : 5432);
    std::string db = t.path.empty() ? "postgres" : t.path;
    const char* keys[] = {"host", "port", "user", "password", "dbname", "connect_timeout", nullptr};
    const char* vals[] = {t.host.c_str(),
                          port.c_str(),
                          t.user.empty() ? "postgres" : t.user.c_str(),
                          t.password.c_str(),
                          db.c_str(),
                          "5",
                          nullptr};
    c_ = PQconnectdbParams(keys, vals, 0);
    if (PQstatus(c_) != CONNECTION_OK) {
      std::string m = PQerrorMessage(c_);
      PQfinish(c_);
      throw std::runtime_error("postgres: " + m);
    }
  }
  ~pg_client() override { PQfinish(c_); }
  void cycle() override {
    acquire();
    release();
  }
  bool has_blocking() const override { return true; }
  void acquire() override { exec("SELECT pg_advisory_lock(7242)"); }
  void release() override { exec("SELECT pg_advisory_unlock(7242)"); }
  std::string what() const override { return "libpq: pg_advisory_lock + pg_advisory_unlock"; }

 private:
  void exec(const char* sql) {
    PGresult* r = PQexec(c_, sql);
    bool ok = PQresultStatus(r) == PGRES_TUPLES_OK;
    PQclear(r);
    if (!ok) throw std::runtime_error(std::string("postgres: ") + PQerrorMessage(c_));
  }
  PGconn* c_{nullptr};
};

}  // namespace

std::unique_ptr<client> make_pg(const target& t) { return std::make_unique<pg_client>(t); }

}  // namespace dlock::floor
