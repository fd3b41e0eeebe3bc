// dlock run in the foreground of a terminal: CMD gets the terminal (it can read it, Ctrl-C
// reaches it), and the terminal is dlock's again once CMD is done.
#include <gtest/gtest.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <string>
#include <thread>

#include "cli_harness.hpp"
#include "support/poll.hpp"

namespace dlock::test {
namespace {

using namespace std::chrono_literals;

// dlock as the session leader of a fresh pseudo-terminal (as a login shell's foreground job).
class on_terminal {
 public:
  on_terminal(const cli_sandbox& box, std::vector<std::string> args) {
    args.insert(args.begin(), DLOCK_CLI_PATH);
    std::vector<std::string> env;
    for (char** e = environ; *e; ++e) env.emplace_back(*e);
    for (auto& [k, v] : box.env()) env.push_back(k + "=" + v);
    std::vector<char*> argv, envp;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    for (auto& e : env) envp.push_back(e.data());
    envp.push_back(nullptr);
    pid_ = ::forkpty(&master_, nullptr, nullptr, nullptr);
    if (pid_ == 0) {
      ::execve(argv[0], argv.data(), envp.data());
      ::_exit(127);
    }
  }
  ~on_terminal() {
    if (pid_ > 0 && !status_) {
      ::kill(-pid_, SIGKILL);
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    if (master_ >= 0) ::close(master_);
  }
  bool ok() const { return pid_ > 0; }
  void type(const std::string& s) {
    [[maybe_unused]] auto n = ::write(master_, s.data(), s.size());
  }
  // Reads the terminal until `text` appears or `timeout` passes.
  bool expect(const std::string& text, std::chrono::milliseconds timeout) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (output_.find(text) == std::string::npos) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      pollfd p{master_, POLLIN, 0};
      if (left.count() <= 0 || ::poll(&p, 1, static_cast<int>(left.count())) <= 0) return false;
      char buf[512];
      auto n = ::read(master_, buf, sizeof buf);
      if (n <= 0) return false;
      output_.append(buf, static_cast<std::size_t>(n));
    }
    return true;
  }
  std::optional<int> wait(std::chrono::milliseconds timeout) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      int st = 0;
      if (::waitpid(pid_, &st, WNOHANG) == pid_) {
        status_ = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        return status_;
      }
      char buf[512];
      pollfd p{master_, POLLIN, 0};
      if (::poll(&p, 1, 20) > 0 && ::read(master_, buf, sizeof buf) > 0) {
      }
    }
    return std::nullopt;
  }
  const std::string& output() const { return output_; }
  // True once dlock has stopped (it is our child: waitpid reports it).
  bool stopped(std::chrono::milliseconds timeout) {
    return poll_until(
        [&] {
          int st = 0;
          return ::waitpid(pid_, &st, WNOHANG | WUNTRACED) == pid_ && WIFSTOPPED(st);
        },
        timeout, std::chrono::milliseconds{20});
  }
  void signal(int sig) { ::kill(pid_, sig); }
  int terminal() const { return master_; }
  pid_t pid() const { return pid_; }

 private:
  int master_{-1};
  pid_t pid_{-1};
  std::string output_;
  std::optional<int> status_;
};

TEST(CliRunTerminal, CommandReadsTheTerminalAndGetsCtrlC) {
  cli_sandbox box;
  {
    on_terminal t(box, {"run", "tty", "--", "sh", "-c", "echo ready; read x; echo \"got:$x\""});
    ASSERT_TRUE(t.ok());
    ASSERT_TRUE(t.expect("ready", 30s)) << t.output();
    t.type("hello\n");
    EXPECT_TRUE(t.expect("got:hello", 10s)) << "CMD could not read the terminal:\n" << t.output();
    EXPECT_EQ(t.wait(10s), 0) << t.output();
  }
  {
    on_terminal t(box, {"run", "tty", "--", "sh", "-c", "sleep 30 & echo \"bg $! ready\"; wait"});
    ASSERT_TRUE(t.expect("ready", 30s)) << t.output();
    auto at = t.output().find("bg ");
    ASSERT_NE(at, std::string::npos) << t.output();
    pid_t bg = std::stoi(t.output().substr(at + 3));
    t.type("\x03");  // Ctrl-C
    auto st = t.wait(10s);
    EXPECT_EQ(st, 128 + SIGINT) << t.output();
    // The shell's `&` job ignores SIGINT; it must not run on once the lock is released. dlock
    // SIGKILLed it before it exited, but a loaded machine may take a moment to end it (a CI
    // run saw it still running right after dlock's exit); left alive, it would run 30 s.
    EXPECT_TRUE(poll_until([&] { return !running(bg); }, 2s))
        << "the background job survived Ctrl-C";
    if (running(bg)) ::kill(bg, SIGKILL);
  }
  EXPECT_EQ(box.run({"run", "-n", "tty", "--", "true"}).status, 0);
}

// Ctrl-Z stops CMD and dlock (the job a shell would show as stopped) and gives the terminal
// back to dlock's group; SIGCONT (what `fg` sends) hands it to CMD again and continues it.
TEST(CliRunTerminal, CtrlZStopsTheJobAndSigcontResumesIt) {
  cli_sandbox box;
  on_terminal t(box, {"run", "tty", "--", "sh", "-c", "echo ready; read x; echo \"got:$x\""});
  ASSERT_TRUE(t.expect("ready", 30s)) << t.output();
  t.type("\x1a");  // Ctrl-Z
  ASSERT_TRUE(t.stopped(10s)) << "dlock did not stop with its job";
  EXPECT_EQ(::tcgetpgrp(t.terminal()), t.pid()) << "the terminal is not dlock's again";
  t.signal(SIGCONT);
  t.type("hello\n");
  EXPECT_TRUE(t.expect("got:hello", 10s)) << t.output();
  EXPECT_EQ(t.wait(10s), 0) << t.output();
}

}  // namespace
}  // namespace dlock::test
