#pragma once
// Runs CMD while a lock is held: spawns it with the lock's environment, forwards signals,
// and stops it if the lock is lost.

#include <chrono>
#include <dlock/hold.hpp>
#include <string>
#include <vector>

#include "cli/signal_watch.hpp"

namespace dlock::cli {

struct child_spec {
  std::vector<std::string> argv;
  std::string lock_name;
  std::string url;
  std::chrono::milliseconds grace{5000};  // SIGTERM -> SIGKILL when the lock is lost
};

// Returns CMD's exit status (128+N if killed by signal N), 127/126 if it could not be
// started, or exit_lock_lost if the lock was lost while it ran.
int supervise(const child_spec& spec, const dlock::hold& hold, signal_watch& signals);

}  // namespace dlock::cli
