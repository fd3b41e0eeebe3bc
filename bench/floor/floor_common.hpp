#pragma once
// The raw floor of each backend: the round trips a lock cycle needs, sent by hand with the
// backend's own C client library on one connection, so `dlock bench` and its floor share a
// client stack. Figures print as bench_report (the same JSON keys as `dlock bench`).

#include <chrono>
#include <memory>
#include <string>

#include "cli/bench/bench_report.hpp"

namespace dlock::floor {

struct target {
  std::string scheme;  // redis, zk, postgres, mysql, sqlite, etcd
  std::string host{"127.0.0.1"};
  int port{0};
  std::string user;
  std::string password;
  std::string path;  // database name (postgres, mysql) or file (sqlite)
};

// scheme://[user[:password]@]host[:port][/path]; throws std::runtime_error when malformed.
target parse_target(const std::string& url);

// One connection to the backend.
class client {
 public:
  virtual ~client() = default;
  // One uncontended lock cycle's round trips. Throws std::runtime_error on failure.
  virtual void cycle() = 0;
  // The backend's own blocking primitive, for the contended floor; false if it has none.
  virtual bool has_blocking() const { return false; }
  // Run once on one connection before the contended clients start.
  virtual void prepare() {}
  virtual void acquire() {}
  virtual void release() {}
  // Human description of cycle() / acquire()+release() for the notes.
  virtual std::string what() const = 0;
};

std::unique_ptr<client> make_redis(const target& t);
// Issue 4's mandated design at its leanest: EVALSHA acquire (SET NX PX + INCR) and EVALSHA
// compare-and-delete release; redis only, for `--scenario scripts`.
std::unique_ptr<client> make_redis_scripts(const target& t);
std::unique_ptr<client> make_zk(const target& t);
std::unique_ptr<client> make_pg(const target& t);
std::unique_ptr<client> make_mysql(const target& t);
std::unique_ptr<client> make_sqlite(const target& t);
std::unique_ptr<client> make_etcd(const target& t);
std::unique_ptr<client> make_client(const target& t);

cli::bench_report run_uncontended(client& c, std::chrono::milliseconds duration, std::size_t count);
// `clients` forked processes, each with its own connection, on the blocking primitive.
cli::bench_report run_contended(const target& t, int clients, std::chrono::milliseconds duration);

}  // namespace dlock::floor
