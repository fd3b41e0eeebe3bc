#include "support/mariadb_server.hpp"

#include <mysql.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "support/mode_apart.hpp"

namespace dlock::test {
namespace {

bool on_path(const std::string& tool) {
  for (const char* d : {"/usr/sbin/", "/usr/bin/", "/sbin/", "/bin/"}) {
    if (std::filesystem::exists(std::string(d) + tool)) return true;
  }
  return false;
}

}  // namespace

std::string mariadb_server::log() const {
  std::ifstream f(dir_.path() + "/server.log");
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

mariadb_server::mariadb_server(std::vector<std::string> server_args)
    : server_args_(std::move(server_args)) {
  for (const char* tool : {"mariadb-install-db", "mariadbd"}) {
    if (!on_path(tool)) {
      throw std::runtime_error(std::string("MariaDB is not installed: missing ") + tool +
                               " (apt-get install mariadb-server)");
    }
  }
  port_ = free_port();
  // mariadbd puts its temporary files in $TMPDIR unless told: keep them in its own directory.
  std::filesystem::create_directory(dir_.path() + "/tmp");
  std::filesystem::permissions(dir_.path() + "/tmp", std::filesystem::perms::all);
  std::vector<std::string> install = {"mariadb-install-db",
                                      "--no-defaults",
                                      "--datadir=" + dir_.path() + "/data",
                                      "--auth-root-authentication-method=normal",
                                      "--skip-test-db",
                                      "--tmpdir=" + dir_.path() + "/tmp"};
  if (::geteuid() == 0) install.push_back("--user=mysql");
  auto r = run_command(install, std::chrono::seconds{180});
  if (r.first != 0) throw std::runtime_error("mariadb-install-db failed:\n" + r.second);
  start();
  query("CREATE DATABASE dlock");
  query(std::string("CREATE DATABASE ") + advisory_place);
  query("CREATE USER 'dlock'@'%' IDENTIFIED BY 'secret'");
  query("GRANT ALL ON dlock.* TO 'dlock'@'%'");
  query(std::string("GRANT ALL ON ") + advisory_place + ".* TO 'dlock'@'%'");
}

mariadb_server::~mariadb_server() {
  if (server_) {
    server_->signal(SIGKILL);
    (void)server_->wait(std::chrono::seconds{30});
  }
}

void mariadb_server::start() {
  // flush_log_at_trx_commit=2: no fsync per commit; a clean stop still writes everything.
  std::vector<std::string> argv = {"mariadbd",
                                   "--no-defaults",
                                   "--datadir=" + dir_.path() + "/data",
                                   "--port=" + std::to_string(port_),
                                   "--bind-address=127.0.0.1",
                                   "--socket=" + dir_.path() + "/mysqld.sock",
                                   "--pid-file=" + dir_.path() + "/mariadbd.pid",
                                   "--tmpdir=" + dir_.path() + "/tmp",
                                   "--skip-name-resolve",
                                   "--innodb-flush-log-at-trx-commit=2",
                                   "--max-connections=400"};
  if (::geteuid() == 0) argv.push_back("--user=mysql");
  argv.insert(argv.end(), server_args_.begin(), server_args_.end());
  child_process::options o;
  o.log_file = dir_.path() + "/server.log";
  o.reaped_by = &reaper_;
  server_.emplace(argv, o);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds{60};
  while (std::chrono::steady_clock::now() < deadline) {
    if (!server_->running()) break;
    try {
      query("SELECT 1");
      return;
    } catch (const std::exception&) {
      std::this_thread::sleep_for(std::chrono::milliseconds{100});
    }
  }
  server_.reset();
  throw std::runtime_error("mariadbd did not start:\n" + log());
}

void mariadb_server::stop() {
  if (!server_) return;
  server_->signal(SIGTERM);
  if (!server_->wait(std::chrono::seconds{60})) throw std::runtime_error("mariadbd did not stop");
  server_.reset();
}

void mariadb_server::crash() {
  if (!server_) return;
  server_->signal(SIGKILL);
  if (!server_->wait(std::chrono::seconds{60})) throw std::runtime_error("mariadbd did not die");
  server_.reset();
}

std::string mariadb_server::url(const std::string& query) const {
  return "mysql://dlock:secret@127.0.0.1:" + std::to_string(port_) + "/" + mariadb_database(query) +
         (query.empty() ? "" : "?" + query);
}

std::vector<std::string> mariadb_server::query(const std::string& sql,
                                               const std::vector<std::string>& params) const {
  MYSQL* m = mysql_init(nullptr);
  unsigned timeout = 10;
  mysql_options(m, MYSQL_OPT_CONNECT_TIMEOUT, &timeout);
  mysql_options(m, MYSQL_SET_CHARSET_NAME, "utf8mb4");
  auto fail = [&](const std::string& what, const char* msg) {
    std::string text = what + ": " + msg;
    mysql_close(m);
    throw std::runtime_error(text);
  };
  if (!mysql_real_connect(m, "127.0.0.1", "root", nullptr, nullptr, port_, nullptr, 0)) {
    fail("admin connection to mariadb", mysql_error(m));
  }
  MYSQL_STMT* s = mysql_stmt_init(m);
  if (mysql_stmt_prepare(s, sql.data(), sql.size())) fail(sql, mysql_stmt_error(s));
  std::vector<MYSQL_BIND> binds(params.size());
  std::vector<unsigned long> lens(params.size());
  for (std::size_t i = 0; i < params.size(); ++i) {
    lens[i] = params[i].size();
    binds[i].buffer_type = MYSQL_TYPE_STRING;
    binds[i].buffer = const_cast<char*>(params[i].data());
    binds[i].buffer_length = lens[i];
    binds[i].length = &lens[i];
  }
  if (!binds.empty() && mysql_stmt_bind_param(s, binds.data())) fail(sql, mysql_stmt_error(s));
  if (mysql_stmt_execute(s)) fail(sql, mysql_stmt_error(s));
  std::vector<std::string> out;
  if (auto n = mysql_stmt_field_count(s); n > 0) {
    std::vector<std::string> bufs(n, std::string(4096, '\0'));
    std::vector<unsigned long> len(n);
    std::vector<my_bool> null(n);
    std::vector<MYSQL_BIND> rb(n);
    for (unsigned i = 0; i < n; ++i) {
      rb[i].buffer_type = MYSQL_TYPE_STRING;
      rb[i].buffer = bufs[i].data();
      rb[i].buffer_length = bufs[i].size();
      rb[i].length = &len[i];
      rb[i].is_null = &null[i];
    }
    mysql_stmt_bind_result(s, rb.data());
    for (int rc; (rc = mysql_stmt_fetch(s)) == 0 || rc == MYSQL_DATA_TRUNCATED;) {
      out.emplace_back(null[0] ? "" : bufs[0].substr(0, std::min<unsigned long>(len[0], 4096)));
    }
  }
  mysql_stmt_close(s);
  mysql_close(m);
  return out;
}

}  // namespace dlock::test
