#pragma once
// A wall clock that a test steps for real in child processes, through Debian's libfaketime
// (packages faketime, libfaketime): the child is started with the library preloaded and reads
// its offset from a file on every clock call (FAKETIME_NO_CACHE), so rewriting the file steps
// the child's CLOCK_REALTIME while it runs. CLOCK_MONOTONIC and CLOCK_BOOTTIME stay real
// (FAKETIME_DONT_FAKE_MONOTONIC): what an NTP step or an operator's `date -s` does.

#include <map>
#include <string>

namespace dlock::test {

// The preload library's path, or "" when it is not installed ($DLOCK_LIBFAKETIME overrides).
std::string libfaketime_path();

class stepped_clock {
 public:
  // Creates `path` holding offset "+0" (the real time).
  explicit stepped_clock(std::string path);
  // Steps every process started with env() to real time + `offset` ("+1h", "-1h", "+0", any
  // libfaketime offset), atomically (write a new file, rename it over the old one).
  // Throws std::runtime_error if the file cannot be written.
  void set(const std::string& offset);
  // The environment for a child process whose wall clock follows this file. Throws
  // std::runtime_error if libfaketime is not installed.
  std::map<std::string, std::string> env() const;
  const std::string& path() const noexcept { return path_; }

 private:
  std::string path_;
};

}  // namespace dlock::test
