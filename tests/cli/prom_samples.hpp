#pragma once
// The samples of a Prometheus text-format file: "name{labels}" -> value (comments skipped).
#include <map>
#include <sstream>
#include <string>

namespace dlock::test {

inline std::map<std::string, std::string> prom_samples(const std::string& text) {
  std::map<std::string, std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    auto space = line.rfind(' ');
    out[line.substr(0, space)] = line.substr(space + 1);
  }
  return out;
}

}  // namespace dlock::test
