#include "support/process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "support/reaper.hpp"

extern char** environ;

namespace dlock::test {

std::string read_proc_file(pid_t pid, const std::string& file) {
  const auto path = "/proc/" + std::to_string(pid) + "/" + file;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  std::string out;
  char buf[4096];
  for (;;) {
    auto n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      out.clear();
      break;
    }
    if (n == 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return out;
}

std::vector<std::string> proc_stat_fields(pid_t pid) {
  auto text = read_proc_file(pid, "stat");
  auto line = text.substr(0, text.find('\n'));
  if (line.empty()) return {};
  auto close = line.rfind(')');
  if (close == std::string::npos) return {};
  std::istringstream rest(line.substr(close + 1));
  std::vector<std::string> fields;
  for (std::string f; rest >> f;) fields.push_back(std::move(f));
  return fields;
}

child_process::child_process(const std::vector<std::string>& argv, const options& opt)
    : reaper_(opt.reaped_by) {
  int out[2];
  int in[2];
  if (pipe2(out, O_CLOEXEC) != 0 || pipe2(in, O_CLOEXEC) != 0) {
    throw std::runtime_error("pipe: " + std::string(std::strerror(errno)));
  }
  int log_fd = -1;
  if (!opt.log_file.empty()) {
    log_fd = ::open(opt.log_file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (log_fd < 0) throw std::runtime_error("open " + opt.log_file + ": " + std::strerror(errno));
  }
  std::vector<std::string> env_store;
  for (char** e = environ; *e; ++e) {
    std::string kv(*e);
    auto eq = kv.find('=');
    if (eq != std::string::npos && opt.env.contains(kv.substr(0, eq))) continue;
    env_store.push_back(std::move(kv));
  }
  for (auto& [k, v] : opt.env) env_store.push_back(k + "=" + v);
  std::vector<char*> envp;
  for (auto& s : env_store) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = argv;
  std::vector<char*> cargv;
  for (auto& a : args) cargv.push_back(a.data());
  cargv.push_back(nullptr);

  pid_ = fork();
  if (pid_ < 0) throw std::runtime_error("fork: " + std::string(std::strerror(errno)));
  if (pid_ == 0) {
    if (opt.new_process_group) setpgid(0, 0);
    dup2(in[0], 0);
    dup2(log_fd >= 0 ? log_fd : out[1], 1);
    if (log_fd >= 0)
      dup2(log_fd, 2);
    else if (opt.merge_stderr)
      dup2(out[1], 2);
    if (!opt.cwd.empty() && chdir(opt.cwd.c_str()) != 0) _exit(126);
    environ = envp.data();
    execvp(cargv[0], cargv.data());
    _exit(127);
  }
  ::close(out[1]);
  ::close(in[0]);
  if (log_fd >= 0) ::close(log_fd);
  out_fd_ = out[0];
  in_fd_ = in[1];
  if (reaper_) reaper_->watch(pid_);
}

child_process::child_process(child_process&& o) noexcept
    : reaper_(o.reaper_),
      pid_(o.pid_),
      out_fd_(o.out_fd_),
      in_fd_(o.in_fd_),
      buffer_(std::move(o.buffer_)),
      status_(o.status_) {
  o.pid_ = -1;
  o.out_fd_ = o.in_fd_ = -1;
}

child_process& child_process::operator=(child_process&& o) noexcept {
  if (this != &o) {
    this->~child_process();
    new (this) child_process(std::move(o));
  }
  return *this;
}

child_process::~child_process() {
  if (pid_ > 0 && !status_) {
    ::kill(-pid_, SIGKILL);
    ::kill(pid_, SIGKILL);
    reap_blocking();
  }
  if (out_fd_ >= 0) ::close(out_fd_);
  if (in_fd_ >= 0) ::close(in_fd_);
}

void child_process::reap_blocking() { (void)reap(true); }

// Sees the exit first and reaps after: until reaped, the pid cannot name another process, so
// the reaper, told in between, never kills a stranger that got it.
bool child_process::reap(bool block) {
  siginfo_t info{};
  int r;
  while ((r = waitid(P_PID, static_cast<id_t>(pid_), &info,
                     WEXITED | WNOWAIT | (block ? 0 : WNOHANG))) < 0 &&
         errno == EINTR) {
  }
  if (r == 0 && info.si_pid != pid_) return false;  // still running
  if (r < 0 && !block) return false;
  if (reaper_) reaper_->forget(pid_);
  int st = 0;
  while (waitpid(pid_, &st, 0) < 0 && errno == EINTR) {
  }
  status_ = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  return true;
}

std::optional<std::string> child_process::read_line(std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (auto nl = buffer_.find('\n'); nl != std::string::npos) {
      auto line = buffer_.substr(0, nl);
      buffer_.erase(0, nl + 1);
      return line;
    }
    if (out_fd_ < 0) return std::nullopt;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return std::nullopt;
    pollfd p{out_fd_, POLLIN, 0};
    int r = ::poll(&p, 1, static_cast<int>(left.count()));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return std::nullopt;
    char buf[4096];
    auto n = ::read(out_fd_, buf, sizeof buf);
    if (n <= 0) {
      ::close(out_fd_);
      out_fd_ = -1;
      if (!buffer_.empty()) {
        auto line = std::move(buffer_);
        buffer_.clear();
        return line;
      }
      return std::nullopt;
    }
    buffer_.append(buf, static_cast<std::size_t>(n));
  }
}

std::optional<std::string> child_process::wait_for_line(const std::string& prefix,
                                                        std::chrono::milliseconds timeout) {
  return wait_for_line_if([&](const std::string& l) { return l.starts_with(prefix); }, timeout);
}

std::optional<std::string> child_process::wait_for_line_with(const std::string& text,
                                                             std::chrono::milliseconds timeout) {
  return wait_for_line_if([&](const std::string& l) { return l.find(text) != std::string::npos; },
                          timeout);
}

std::optional<std::string> child_process::wait_for_line_if(
    const std::function<bool(const std::string&)>& wanted, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return std::nullopt;
    auto line = read_line(left);
    if (!line) return std::nullopt;
    if (wanted(*line)) return line;
  }
}

void child_process::signal(int sig) const {
  if (pid_ > 0 && !status_) ::kill(pid_, sig);
}

std::optional<int> child_process::wait(std::chrono::milliseconds timeout) {
  if (status_) return status_;
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (reap(false)) return status_;
    if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds{5});
  }
}

bool child_process::running() { return !wait(std::chrono::milliseconds{0}).has_value(); }

void child_process::close_stdin() {
  if (in_fd_ >= 0) ::close(in_fd_);
  in_fd_ = -1;
}

void child_process::write_stdin(const std::string& s) {
  if (in_fd_ >= 0) {
    auto n = ::write(in_fd_, s.data(), s.size());
    (void)n;
  }
}

std::pair<int, std::string> run_command(const std::vector<std::string>& argv,
                                        std::chrono::milliseconds timeout) {
  child_process::options o;
  o.merge_stderr = true;
  child_process p(argv, o);
  std::string out;
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (auto line = p.read_line(std::chrono::duration_cast<std::chrono::milliseconds>(
             deadline - std::chrono::steady_clock::now()))) {
    out += *line + "\n";
  }
  auto st = p.wait(std::chrono::duration_cast<std::chrono::milliseconds>(std::max(
      deadline - std::chrono::steady_clock::now(), std::chrono::steady_clock::duration{0})));
  return {st.value_or(-1), out};
}

}  // namespace dlock::test
