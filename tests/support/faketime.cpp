#include "support/faketime.hpp"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <stdexcept>

namespace dlock::test {

std::string libfaketime_path() {
  if (const char* p = std::getenv("DLOCK_LIBFAKETIME"); p && *p) return p;
  for (const char* p :
       {"/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1",
        "/usr/lib/aarch64-linux-gnu/faketime/libfaketime.so.1",
        "/usr/lib/faketime/libfaketime.so.1", "/usr/local/lib/faketime/libfaketime.so.1"}) {
    if (::access(p, R_OK) == 0) return p;
  }
  return {};
}

stepped_clock::stepped_clock(std::string path) : path_(std::move(path)) { set("+0"); }

void stepped_clock::set(const std::string& offset) {
  // A reader must never see a half-written file: libfaketime re-reads it on every call.
  auto tmp = path_ + ".new";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << offset << "\n";
    if (!out.flush()) throw std::runtime_error("cannot write " + tmp);
  }
  if (std::rename(tmp.c_str(), path_.c_str()) != 0)
    throw std::runtime_error("cannot rename " + tmp + " to " + path_);
}

std::map<std::string, std::string> stepped_clock::env() const {
  auto lib = libfaketime_path();
  if (lib.empty())
    throw std::runtime_error(
        "libfaketime is not installed (Debian packages faketime libfaketime; "
        "scripts/install-deps.sh)");
  return {{"LD_PRELOAD", lib},
          {"FAKETIME_TIMESTAMP_FILE", path_},
          {"FAKETIME_NO_CACHE", "1"},
          {"FAKETIME_DONT_FAKE_MONOTONIC", "1"}};
}

}  // namespace dlock::test
