#include "support/postgres_server.hpp"

#include <libpq-fe.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "support/mode_apart.hpp"
#include "support/process.hpp"

namespace dlock::test {
namespace {

const std::string bin = "/usr/lib/postgresql/15/bin/";

void check(const std::pair<int, std::string>& r, const std::string& what) {
  if (r.first != 0) {
    throw std::runtime_error(what + " failed (status " + std::to_string(r.first) + "):\n" +
                             r.second);
  }
}

}  // namespace

std::vector<std::string> postgres_server::as_postgres(std::vector<std::string> argv) const {
  if (::geteuid() == 0) argv.insert(argv.begin(), {"runuser", "-u", "postgres", "--"});
  return argv;
}

std::string postgres_server::log() const {
  std::ifstream f(dir_.path() + "/server.log");
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

postgres_server::postgres_server() {
  for (const char* tool : {"initdb", "pg_ctl", "postgres"}) {
    if (!std::filesystem::exists(bin + tool)) {
      throw std::runtime_error("PostgreSQL 15 is not installed: missing " + bin + tool +
                               " (apt-get install postgresql)");
    }
  }
  port_ = free_port();
  check(run_command(as_postgres({bin + "initdb", "-D", dir_.path() + "/data", "-U", "postgres",
                                 "--auth-local=trust", "--auth-host=scram-sha-256", "-E", "UTF8",
                                 "--locale=C", "--no-sync"}),
                    std::chrono::seconds{120}),
        "initdb");
  start();
  query("CREATE ROLE dlock LOGIN PASSWORD 'secret'", {}, "postgres");
  query("CREATE DATABASE dlock OWNER dlock", {}, "postgres");
}

postgres_server::~postgres_server() {
  if (running_) {
    auto r = run_command(
        as_postgres({bin + "pg_ctl", "-D", dir_.path() + "/data", "-m", "immediate", "-w", "stop"}),
        std::chrono::seconds{30});
    if (r.first == 0) forget_postmaster();  // else the reaper kills it as it quits
  }
}

void postgres_server::start() {
  // fsync off: a test server need not survive a power cut (a clean stop still writes all).
  // pg_stat_statements: a scale test counts statements with it.
  auto opts = "-p " + std::to_string(port_) + " -k " + dir_.path() +
              " -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=400"
              " -c shared_preload_libraries=pg_stat_statements";
  auto r =
      run_command(as_postgres({bin + "pg_ctl", "-D", dir_.path() + "/data", "-l",
                               dir_.path() + "/server.log", "-o", opts, "-w", "-t", "60", "start"}),
                  std::chrono::seconds{90});
  if (r.first != 0) throw std::runtime_error("pg_ctl start failed:\n" + r.second + log());
  running_ = true;
  watch_postmaster();
}

// The postmaster is pg_ctl's child, not ours: only its pid file names it. Read right after
// pg_ctl start succeeded, so the file is the running server's and not a stale one.
void postgres_server::watch_postmaster() {
  std::ifstream f(dir_.path() + "/data/postmaster.pid");
  long pid = 0;
  if (!(f >> pid) || pid <= 0) throw std::runtime_error("postgres: no pid in postmaster.pid");
  postmaster_ = static_cast<pid_t>(pid);
  reaper_.watch(postmaster_);
}

// Right after pg_ctl stop: the pid may be reused once the postmaster is gone.
void postgres_server::forget_postmaster() {
  if (postmaster_ > 0) reaper_.forget(postmaster_);
  postmaster_ = -1;
}

void postgres_server::stop() {
  check(run_command(as_postgres({bin + "pg_ctl", "-D", dir_.path() + "/data", "-m", "fast", "-w",
                                 "-t", "60", "stop"}),
                    std::chrono::seconds{90}),
        "pg_ctl stop");
  running_ = false;
  forget_postmaster();
}

void postgres_server::crash() {
  check(run_command(as_postgres({bin + "pg_ctl", "-D", dir_.path() + "/data", "-m", "immediate",
                                 "-w", "-t", "60", "stop"}),
                    std::chrono::seconds{90}),
        "pg_ctl stop -m immediate");
  running_ = false;
  forget_postmaster();
}

std::string postgres_server::url(const std::string& query) const {
  return "postgres://dlock:secret@127.0.0.1:" + std::to_string(port_) + "/dlock" +
         (query.empty() ? "" : "?" + postgres_query(query));
}

std::vector<std::string> postgres_server::query(const std::string& sql,
                                                const std::vector<std::string>& params,
                                                const std::string& db) const {
  auto port = std::to_string(port_);
  const char* keys[] = {"host", "port", "user", "dbname", "connect_timeout", nullptr};
  const char* values[] = {dir_.path().c_str(), port.c_str(), "postgres", db.c_str(), "10", nullptr};
  PGconn* c = PQconnectdbParams(keys, values, 0);
  if (PQstatus(c) != CONNECTION_OK) {
    std::string msg = PQerrorMessage(c);
    PQfinish(c);
    throw std::runtime_error("admin connection to postgres failed: " + msg);
  }
  std::vector<const char*> p;
  for (const auto& s : params) p.push_back(s.c_str());
  PGresult* r = PQexecParams(c, sql.c_str(), static_cast<int>(p.size()), nullptr, p.data(), nullptr,
                             nullptr, 0);
  auto st = PQresultStatus(r);
  if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
    std::string msg = PQresultErrorMessage(r);
    PQclear(r);
    PQfinish(c);
    throw std::runtime_error("admin query '" + sql + "' failed: " + msg);
  }
  std::vector<std::string> out;
  for (int i = 0; i < PQntuples(r); ++i) out.emplace_back(PQgetvalue(r, i, 0));
  PQclear(r);
  PQfinish(c);
  return out;
}

std::vector<pid_t> postgres_server::processes() const {
  std::vector<pid_t> out;
  if (postmaster_ <= 0) return out;
  out.push_back(postmaster_);
  for (const auto& e : std::filesystem::directory_iterator("/proc")) {
    const auto name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(e.path() / "stat");
    std::string stat;
    std::getline(in, stat);
    // pid (comm) state ppid ...: comm may hold spaces and parentheses, so read after the last ')'.
    auto close = stat.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(stat.substr(close + 1));
    std::string state;
    pid_t ppid = 0;
    rest >> state >> ppid;
    if (ppid == postmaster_) out.push_back(static_cast<pid_t>(std::stol(name)));
  }
  return out;
}

}  // namespace dlock::test
