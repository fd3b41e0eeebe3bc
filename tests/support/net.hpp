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

// Where a temp_dir goes: scratch files of the test itself honour $TMPDIR; a server's files
// never do, because servers run as other users (mysql, postgres) who may not be allowed to
// write there (a root-owned 0755 $TMPDIR), and their own temporary files go inside it.
enum class temp_kind { scratch, server };

// A fresh directory (mode 0777, so servers running as other users can use it), removed with
// its contents on destruction: under $TMPDIR (or /tmp) for scratch, always under /tmp for a
// server.
class temp_dir {
 public:
  explicit temp_dir(const std::string& prefix = "dlock-test", temp_kind kind = temp_kind::scratch);
  temp_dir(const temp_dir&) = delete;
  ~temp_dir();
  const std::string& path() const noexcept { return path_; }

 private:
  std::string path_;
};

// A random lowercase hex string of n characters (lock-name prefixes, database names).
std::string random_suffix(std::size_t n = 8);

}  // namespace dlock::test
