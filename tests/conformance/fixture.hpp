#pragma once
// What each backend provides to the conformance suite: URLs for its sessions, a way to end a
// session's lease from the server side, and a raw look at the stored entries.
// Every backend instantiates the suite once (see memory_test.cpp) with its fixture.

#include <signal.h>
#include <sys/types.h>

#include <chrono>
#include <dlock/dlock.hpp>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <memory>
#include <ostream>
#include <string>
#include <thread>
#include <vector>

namespace dlock::test {

// The backend made to stop answering while this lives: its connections stay open and its
// requests get no reply, as a paused server (GC, a stopped VM) or a black-holed route does.
class stalled_server {
 public:
  virtual ~stalled_server() = default;
};

// Server processes stopped with SIGSTOP, continued when destroyed (in the reverse order).
class stopped_process final : public stalled_server {
 public:
  explicit stopped_process(pid_t pid) : stopped_process(std::vector<pid_t>{pid}) {}
  // Returns once every thread of every process is stopped (or after 5 s): kill() only queues
  // the signal, and a request served in between made CI-18's stalled etcd grant a lock.
  explicit stopped_process(std::vector<pid_t> pids) : pids_(std::move(pids)) {
    for (pid_t p : pids_) ::kill(p, SIGSTOP);
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds{5};
    while (!all_stopped() && std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds{1});
    }
  }
  ~stopped_process() override {
    for (auto p = pids_.rbegin(); p != pids_.rend(); ++p) ::kill(*p, SIGCONT);
  }
  stopped_process(const stopped_process&) = delete;
  stopped_process& operator=(const stopped_process&) = delete;

 private:
  // Every task of every pid in state T (stopped), by /proc/PID/task/TID/stat.
  bool all_stopped() const {
    for (pid_t p : pids_) {
      std::error_code ec;
      const auto dir = "/proc/" + std::to_string(p) + "/task";
      for (const auto& task : std::filesystem::directory_iterator(dir, ec)) {
        std::ifstream stat(task.path() / "stat");
        std::string text((std::istreambuf_iterator<char>(stat)), {});
        const auto paren = text.rfind(')');
        if (paren == std::string::npos || paren + 2 >= text.size()) continue;  // gone
        const char state = text[paren + 2];
        if (state != 'T' && state != 't') return false;
      }
    }
    return true;
  }

  std::vector<pid_t> pids_;
};

class backend_fixture {
 public:
  virtual ~backend_fixture() = default;
  // A URL for one test; every session of the test opens it (same store / server / db).
  // The URL carries a short ttl (see ttl()).
  virtual std::string url() = 0;
  // Entries of `lock` stored in the backend, read raw (not through dlock), including ones
  // whose lease has lapsed but that were not yet removed.
  virtual std::size_t raw_entries(const std::string& lock) = 0;
  // Entries of `lock` stored wherever the backend keeps them (Redlock: on every master, where
  // raw_entries counts any master's): a waiter counted here has its place in every order the
  // backend keeps, so one that starts after it queues behind it.
  virtual std::size_t queued_entries(const std::string& lock) { return raw_entries(lock); }
  // Ends the lease of session `s` from the server side, as a crash or partition would.
  virtual void expire(const dlock::session& s) = 0;
  // Makes the backend stop answering until the result is destroyed; nullptr where the fixture
  // cannot (the suite's test then skips).
  virtual std::unique_ptr<stalled_server> stall() { return nullptr; }
  // The TTL the fixture's URLs ask for.
  virtual std::chrono::milliseconds ttl() const { return std::chrono::seconds{2}; }
  // What the backend provides (FIFO, shared locks, listing names, a dead process freed at
  // once, in-process only) is not stated here: the suite reads session::capabilities().
};

using fixture_factory = std::function<std::unique_ptr<backend_fixture>()>;

struct fixture_param {
  std::string name;
  fixture_factory make;
  friend void PrintTo(const fixture_param& p, std::ostream* os) { *os << p.name; }
};

}  // namespace dlock::test
