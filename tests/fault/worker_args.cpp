#include "fault/worker_args.hpp"

#include <cstdio>
#include <cstdlib>

namespace dlock::fault::worker {

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr, "dlock_fault_worker: %s\n", why);
  std::exit(2);
}

config parse_args(int argc, char** argv) {
  config c;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage(("missing value after " + a).c_str());
      return argv[++i];
    };
    if (a == "--url")
      c.url = value();
    else if (a == "--lock")
      c.lock = value();
    else if (a == "--register")
      c.reg = value();
    else if (a == "--log")
      c.log = value();
    else if (a == "--id")
      c.id = value();
    else if (a == "--threads")
      c.threads = std::stoi(value());
    else if (a == "--max-ops")
      c.max_ops = std::stol(value());
    else if (a == "--max-seconds")
      c.max_seconds = std::stod(value());
    else if (a == "--late-check")
      c.late_check = true;
    else if (a == "--cancel-waits")
      c.cancel_waits = true;
    else if (a == "--no-register")
      c.no_register = true;
    else if (a == "--elect")
      c.elect = true;
    else if (a == "--permits")
      c.permits = static_cast<std::uint32_t>(std::stoul(value()));
    else if (a == "--wait-ms")
      c.wait_ms = std::stoi(value());
    else if (a == "--pause-ms") {
      auto v = value();
      auto colon = v.find(':');
      if (colon == std::string::npos) usage("--pause-ms wants MIN:MAX");
      c.pause_min_ms = std::stoi(v.substr(0, colon));
      c.pause_max_ms = std::stoi(v.substr(colon + 1));
    } else {
      usage(("unknown argument " + a).c_str());
    }
  }
  if (c.url.empty() || c.lock.empty() || c.reg.empty() || c.log.empty() || c.id.empty())
    usage("--url, --lock, --register, --log and --id are required");
  if (c.threads < 1 || c.pause_min_ms < 0 || c.pause_max_ms < c.pause_min_ms || c.wait_ms < 0)
    usage("bad --threads, --pause-ms or --wait-ms");
  return c;
}

}  // namespace dlock::fault::worker
