#include "cli_harness.hpp"

#include <sys/stat.h>

#include <fstream>
#include <sstream>

namespace dlock::test {

std::vector<std::string> cli_result::lines() const {
  std::vector<std::string> out;
  std::istringstream in(output);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

cli_sandbox::cli_sandbox() { ::mkdir((dir() + "/home").c_str(), 0700); }

std::map<std::string, std::string> cli_sandbox::env() const {
  return {{"XDG_STATE_HOME", dir() + "/state"}, {"HOME", dir() + "/home"}, {"DLOCK_URL", ""}};
}

cli_result cli_sandbox::run(const std::vector<std::string>& args,
                            std::chrono::milliseconds timeout) const {
  return run_through({}, args, timeout);
}

cli_result cli_sandbox::run_through(const std::vector<std::string>& wrapper,
                                    const std::vector<std::string>& args,
                                    std::chrono::milliseconds timeout) const {
  child_process p = start_through(wrapper, args);
  cli_result r;
  auto deadline = std::chrono::steady_clock::now() + timeout;
  auto left = [&] {
    return std::max(std::chrono::milliseconds{0},
                    std::chrono::duration_cast<std::chrono::milliseconds>(
                        deadline - std::chrono::steady_clock::now()));
  };
  while (auto line = p.read_line(left())) r.output += *line + "\n";
  r.status = p.wait(left()).value_or(-1);
  return r;
}

child_process cli_sandbox::start(const std::vector<std::string>& args) const {
  return start_through({}, args);
}

child_process cli_sandbox::start_through(const std::vector<std::string>& wrapper,
                                         const std::vector<std::string>& args) const {
  std::vector<std::string> argv = wrapper;
  argv.push_back(DLOCK_CLI_PATH);
  argv.insert(argv.end(), args.begin(), args.end());
  child_process::options o;
  o.env = env();
  o.merge_stderr = true;
  return child_process(argv, o);
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool file_exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

bool running(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(f, line)) return false;
  auto close = line.rfind(')');
  return close != std::string::npos && close + 2 < line.size() && line[close + 2] != 'Z';
}

}  // namespace dlock::test
