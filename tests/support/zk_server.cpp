#include "support/zk_server.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <thread>

namespace dlock::test {
namespace {

constexpr const char* zk_jar = "/usr/share/java/zookeeper.jar";
constexpr const char* slf4j_jar = "/usr/share/java/slf4j-simple.jar";

void write_file(const std::string& path, const std::string& text) {
  std::ofstream f(path);
  f << text;
  if (!f) throw std::runtime_error("cannot write " + path);
}

std::string common_config(const std::string& data_dir, std::uint16_t port) {
  return "tickTime=500\n"
         "initLimit=20\n"
         "syncLimit=10\n"
         "maxSessionTimeout=60000\n"
         "dataDir=" +
         data_dir + "\nclientPort=" + std::to_string(port) +
         "\nclientPortAddress=127.0.0.1\n"
         "maxClientCnxns=0\n"
         "admin.enableServer=false\n"
         "4lw.commands.whitelist=srvr,ruok,stat,mntr,wchs\n";
}

}  // namespace

std::string zk_four_letter(std::uint16_t port, const std::string& command,
                           std::chrono::milliseconds timeout) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return {};
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(port);
  std::string out;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
      ::send(fd, command.data(), command.size(), MSG_NOSIGNAL) ==
          static_cast<ssize_t>(command.size())) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    for (int reads = 0; reads < 1000; ++reads) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) break;
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) break;
      char buf[4096];
      auto n = ::recv(fd, buf, sizeof buf, 0);
      if (n <= 0) break;
      out.append(buf, static_cast<std::size_t>(n));
    }
  }
  ::close(fd);
  return out;
}

zk_process::zk_process(std::string dir, std::uint16_t client_port, reaper& watchdog)
    : dir_(std::move(dir)), port_(client_port), reaper_(&watchdog) {}

zk_process::~zk_process() { kill(); }

void zk_process::start(const std::string& expected_mode) {
  if (!std::filesystem::exists(zk_jar)) {
    throw std::runtime_error(std::string("ZooKeeper server missing: ") + zk_jar +
                             " (apt-get install zookeeper)");
  }
  child_process::options opt;
  opt.log_file = dir_ + "/server.log";
  opt.reaped_by = reaper_;
  proc_.emplace(
      std::vector<std::string>{
          "java", "-Xmx256m", "-XX:+UseSerialGC", "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
          "-Dzookeeper.admin.enableServer=false", "-Djava.io.tmpdir=" + dir_,
          // Empty lock containers disappear within a second or two.
          "-Dznode.container.checkIntervalMs=1000", "-cp", std::string(zk_jar) + ":" + slf4j_jar,
          "org.apache.zookeeper.server.quorum.QuorumPeerMain", dir_ + "/zoo.cfg"},
      opt);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds{60};
  for (int polls = 0; polls < 1200; ++polls) {
    if (expected_mode.empty() ? !mode().empty() : mode() == expected_mode) return;
    if (!proc_->running()) break;
    if (std::chrono::steady_clock::now() > deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds{50});
  }
  std::ifstream log(dir_ + "/server.log");
  std::string text((std::istreambuf_iterator<char>(log)), {});
  kill();
  throw std::runtime_error("ZooKeeper on port " + std::to_string(port_) + " did not start; log:\n" +
                           text.substr(text.size() > 4000 ? text.size() - 4000 : 0));
}

void zk_process::kill() {
  if (!proc_) return;
  proc_->signal(SIGKILL);
  (void)proc_->wait(std::chrono::seconds{10});
  proc_.reset();
}

std::string zk_process::mode() const {
  auto out = zk_four_letter(port_, "srvr", std::chrono::milliseconds{500});
  auto pos = out.find("Mode: ");
  if (pos == std::string::npos) return {};
  auto end = out.find('\n', pos);
  return out.substr(pos + 6, end == std::string::npos ? std::string::npos : end - pos - 6);
}

zk_server::zk_server() {
  auto port = free_port();
  std::filesystem::create_directories(dir_.path() + "/data");
  write_file(dir_.path() + "/zoo.cfg", common_config(dir_.path() + "/data", port));
  proc_ = std::make_unique<zk_process>(dir_.path(), port, reaper_);
  proc_->start("standalone");
}

zk_ensemble::zk_ensemble(int size) {
  struct ports {
    std::uint16_t client, quorum, election;
  };
  std::vector<ports> p;
  std::string servers;
  for (int i = 0; i < size; ++i) {
    p.push_back({free_port(), free_port(), free_port()});
    servers += "server." + std::to_string(i + 1) + "=127.0.0.1:" + std::to_string(p[i].quorum) +
               ":" + std::to_string(p[i].election) + "\n";
  }
  for (int i = 0; i < size; ++i) {
    auto dir = dir_.path() + "/s" + std::to_string(i + 1);
    std::filesystem::create_directories(dir + "/data");
    write_file(dir + "/data/myid", std::to_string(i + 1) + "\n");
    write_file(dir + "/zoo.cfg", common_config(dir + "/data", p[i].client) + servers);
    members_.push_back(std::make_unique<zk_process>(dir, p[i].client, reaper_));
  }
  // Members wait for each other: start the JVMs together, then wait until each serves.
  std::vector<std::thread> starters;
  std::vector<std::string> errors(members_.size());
  for (std::size_t i = 0; i < members_.size(); ++i) {
    starters.emplace_back([this, i, &errors] {
      try {
        members_[i]->start("");
      } catch (const std::exception& e) {
        errors[i] = e.what();
      }
    });
  }
  for (auto& t : starters) t.join();
  for (auto& e : errors) {
    if (!e.empty()) throw std::runtime_error(e);
  }
}

std::string zk_ensemble::hosts() const {
  std::string s;
  for (auto& m : members_) {
    if (!s.empty()) s += ',';
    s += "127.0.0.1:" + std::to_string(m->port());
  }
  return s;
}

std::optional<std::size_t> zk_ensemble::leader(std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (int polls = 0; polls < 1000; ++polls) {
    for (std::size_t i = 0; i < members_.size(); ++i) {
      if (members_[i]->running() && members_[i]->mode() == "leader") return i;
    }
    if (std::chrono::steady_clock::now() > deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds{100});
  }
  return std::nullopt;
}

}  // namespace dlock::test
