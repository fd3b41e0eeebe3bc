// The PostgreSQL side of the SQL fault tests.
#include "sql/sql_admin.hpp"
#include "support/postgres_server.hpp"

namespace dlock::test {
namespace {

class postgres_admin final : public sql_admin {
 public:
  std::string url(const std::string& user, const std::string& password,
                  const std::string& query) override {
    return "postgres://" + user + ":" + password + "@127.0.0.1:" + std::to_string(pg_.port()) +
           "/dlock" + (query.empty() ? "" : "?" + query);
  }
  std::uint16_t port() override { return pg_.port(); }
  std::string url_missing_db() override {
    return "postgresql://dlock:secret@127.0.0.1:" + std::to_string(pg_.port()) + "/no_such_db";
  }
  void create_user(const std::string& user, const std::string& password) override {
    // Members of role dlock use the tables and functions role dlock created.
    pg_.query("CREATE ROLE " + user + " LOGIN PASSWORD '" + password + "' IN ROLE dlock", {},
              "postgres");
  }
  int kill_connections(const std::string& user) override {
    auto r = pg_.query(
        "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_stat_activity"
        " WHERE usename = $1",
        {user}, "postgres");
    return std::stoi(r.at(0));
  }
  void stop() override { pg_.stop(); }
  void start() override { pg_.start(); }
  std::vector<std::string> stored_names(const std::string& name) override {
    return pg_.query("SELECT name FROM dlock.entries WHERE name = $1", {name});
  }
  std::size_t entry_rows(const std::string& lock) override {
    return std::stoul(
        pg_.query("SELECT count(*) FROM dlock.entries WHERE name = $1", {lock}).at(0));
  }
  std::size_t session_rows() override {
    return std::stoul(pg_.query("SELECT count(*) FROM dlock.sessions").at(0));
  }

 private:
  postgres_server pg_;
};

}  // namespace

sql_admin& admin() {
  static postgres_admin a;
  return a;
}

}  // namespace dlock::test
