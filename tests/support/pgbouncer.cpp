#include "support/pgbouncer.hpp"

#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "support/mode_apart.hpp"

namespace dlock::test {

namespace {
const std::string exe = "/usr/sbin/pgbouncer";
}

pgbouncer::pgbouncer(const postgres_server& server, const std::string& pool_mode,
                     const std::string& settings) {
  using namespace std::chrono_literals;
  if (!std::filesystem::exists(exe)) {
    throw std::runtime_error("PgBouncer is not installed: missing " + exe +
                             " (apt-get install pgbouncer)");
  }
  port_ = free_port();
  const auto& d = dir_.path();
  {
    std::ofstream users(d + "/userlist.txt");
    users << "\"dlock\" \"secret\"\n";
  }
  {
    std::ofstream ini(d + "/pgbouncer.ini");
    ini << "[databases]\n"
        << "dlock = host=127.0.0.1 port=" << server.port() << " dbname=dlock\n"
        << "[pgbouncer]\n"
        << "listen_addr = 127.0.0.1\n"
        << "listen_port = " << port_ << "\n"
        << "unix_socket_dir =\n"
        << "auth_type = scram-sha-256\n"
        << "auth_file = " << d << "/userlist.txt\n"
        << "pool_mode = " << pool_mode << "\n"
        << "ignore_startup_parameters = extra_float_digits,options\n"
        << "max_client_conn = 500\n"
        << "default_pool_size = 40\n"
        << settings << "logfile = " << d << "/pgbouncer.log\n"
        << "pidfile = " << d << "/pgbouncer.pid\n";
  }
  std::filesystem::permissions(d + "/userlist.txt", std::filesystem::perms::all);
  std::filesystem::permissions(d + "/pgbouncer.ini", std::filesystem::perms::all);
  // Its own -u, not runuser: a signal then reaches PgBouncer itself (runuser would delay
  // passing SIGTERM on by two seconds).
  std::vector<std::string> argv{exe};
  if (::geteuid() == 0) argv.insert(argv.end(), {"-u", "postgres"});
  argv.push_back(d + "/pgbouncer.ini");
  child_process::options opt;
  opt.log_file = d + "/stdout.log";
  opt.reaped_by = &reaper_;
  proc_ = std::make_unique<child_process>(argv, opt);
  if (!wait_for_port(port_, 20s)) {
    auto l = log();
    proc_.reset();
    throw std::runtime_error("pgbouncer did not start on port " + std::to_string(port_) + ":\n" +
                             l);
  }
}

pgbouncer::~pgbouncer() {
  if (proc_) {
    proc_->signal(SIGTERM);  // immediate shutdown (SIGINT waits for the clients)
    using namespace std::chrono_literals;
    if (!proc_->wait(10s)) proc_->signal(SIGKILL);
  }
}

std::string pgbouncer::url(const std::string& query) const {
  return "postgres://dlock:secret@127.0.0.1:" + std::to_string(port_) + "/dlock" +
         (query.empty() ? "" : "?" + postgres_query(query));
}

std::string pgbouncer::log() const {
  std::stringstream ss;
  for (const char* f : {"/pgbouncer.log", "/stdout.log"}) {
    std::ifstream in(dir_.path() + f);
    ss << in.rdbuf();
  }
  return ss.str();
}

}  // namespace dlock::test
