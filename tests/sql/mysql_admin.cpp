// The MariaDB side of the SQL fault tests.
#include "sql/sql_admin.hpp"
#include "support/mariadb_server.hpp"

namespace dlock::test {
namespace {

class mysql_admin final : public sql_admin {
 public:
  std::string url(const std::string& user, const std::string& password,
                  const std::string& query) override {
    return "mysql://" + user + ":" + password + "@127.0.0.1:" + std::to_string(db_.port()) +
           "/dlock" + (query.empty() ? "" : "?" + query);
  }
  std::uint16_t port() override { return db_.port(); }
  std::string url_missing_db() override {
    return "mariadb://dlock:secret@127.0.0.1:" + std::to_string(db_.port()) + "/no_such_db";
  }
  void create_user(const std::string& user, const std::string& password) override {
    db_.query("CREATE USER '" + user + "'@'%' IDENTIFIED BY '" + password + "'");
    db_.query("GRANT ALL ON dlock.* TO '" + user + "'@'%'");
  }
  int kill_connections(const std::string& user) override {
    auto ids = db_.query("SELECT id FROM information_schema.processlist WHERE user = ?", {user});
    for (const auto& id : ids) db_.query("KILL CONNECTION " + std::to_string(std::stoll(id)));
    return static_cast<int>(ids.size());
  }
  void stop() override { db_.stop(); }
  void start() override { db_.start(); }
  std::vector<std::string> stored_names(const std::string& name) override {
    return db_.query("SELECT name FROM dlock.dlock_entries WHERE name = CAST(? AS BINARY)", {name});
  }
  std::size_t entry_rows(const std::string& lock) override {
    return std::stoul(
        db_.query("SELECT count(*) FROM dlock.dlock_entries WHERE name = CAST(? AS BINARY)", {lock})
            .at(0));
  }
  std::size_t session_rows() override {
    return std::stoul(db_.query("SELECT count(*) FROM dlock.dlock_sessions").at(0));
  }

 private:
  mariadb_server db_;
};

}  // namespace

sql_admin& admin() {
  static mysql_admin a;
  return a;
}

}  // namespace dlock::test
