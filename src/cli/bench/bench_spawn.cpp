#include "cli/bench/bench_spawn.hpp"

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <thread>

extern char** environ;

namespace dlock::cli {

worker_processes::~worker_processes() {
  for (auto pid : pids_) {
    if (pid > 0) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
  }
}

bool worker_processes::spawn(const std::vector<std::string>& args, std::string& error) {
  std::vector<char*> argv;
  std::string self = "/proc/self/exe";
  argv.push_back(self.data());
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = -1;
  int rc = ::posix_spawn(&pid, self.c_str(), nullptr, nullptr, argv.data(), environ);
  if (rc != 0) {
    error = std::string("cannot start a worker process: ") + std::strerror(rc);
    return false;
  }
  pids_.push_back(pid);
  return true;
}

int worker_processes::wait_all(std::chrono::steady_clock::time_point deadline) {
  int ok = 0;
  for (auto& pid : pids_) {
    while (pid > 0) {
      int status = 0;
      pid_t r = ::waitpid(pid, &status, WNOHANG);
      if (r == pid) {
        if (WIFEXITED(status) && WEXITSTATUS(status) == 0) ++ok;
        pid = -1;
      } else if (r < 0 && errno != EINTR) {
        pid = -1;
      } else if (std::chrono::steady_clock::now() >= deadline) {
        ::kill(pid, SIGKILL);
        ::waitpid(pid, nullptr, 0);
        pid = -1;
      } else {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
    }
  }
  return ok;
}

scratch_dir::scratch_dir() {
  auto base = std::filesystem::temp_directory_path() / "dlock-bench-XXXXXX";
  std::string tmpl = base.string();
  if (::mkdtemp(tmpl.data()) != nullptr) path_ = tmpl;
}

scratch_dir::~scratch_dir() {
  if (path_.empty()) return;
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

}  // namespace dlock::cli
