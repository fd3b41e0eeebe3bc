#pragma once
// Loopback helpers for server fixtures: a free port, waiting until a port accepts.

#include <chrono>
#include <cstdint>
#include <string>

namespace dlock::test {

// A TCP port on 127.0.0.1 that was free a moment ago (bind to port 0, read it, close).
std::uint16_t free_port();
// True once 127.0.0.1:port accepts a TCP connection, false after `timeout`.
bool wait_for_port(std::uint16_t port, std::chrono::milliseconds timeout);

// A fresh directory under $TMPDIR (or /tmp), removed with its contents on destruction.
class temp_dir {
 public:
  explicit temp_dir(const std::string& prefix = "dlock-test");
  temp_dir(const temp_dir&) = delete;
  ~temp_dir();
  const std::string& path() const noexcept { return path_; }

 private:
  std::string path_;
};

// A random lowercase hex string of n characters (lock-name prefixes, database names).
std::string random_suffix(std::size_t n = 8);

}  // namespace dlock::test
