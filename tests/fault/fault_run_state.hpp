#pragma once
// The state of one fault run (fault_driver.hpp's run_one) shared by the files that do its
// parts: fault_driver.cpp (the run's course), fault_workers.cpp (worker processes: start,
// replace, stop) and fault_inject.cpp (injecting each kind of fault). Internal to the driver.

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "fault/fault_driver.hpp"
#include "fault/live_view.hpp"
#include "support/faketime.hpp"
#include "support/net.hpp"
#include "support/process.hpp"
#include "support/tcp_proxy.hpp"

namespace dlock::fault::driver {

using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;
using ms = std::chrono::milliseconds;
using test::monotonic_ns;

struct worker_proc {
  std::string id;
  std::string log;
  std::unique_ptr<test::child_process> proc;
  std::optional<int> status;
  worker_session session;
  std::shared_ptr<test::stepped_clock> clock;  // client_clock_step: this worker's wall clock
};

// "session <id> [<zk session id> <zk password hex>]" from the worker.
worker_session parse_session(const std::string& line);

class run {
 public:
  run(fault_backend& b, std::string name, fault f, const run_params& p, std::string by_design);
  run_report go();

 private:
  void note(const std::string& s) { r_.notes += "  " + s + "\n"; }

  // fault_workers.cpp
  void start_worker(std::size_t slot);
  // Records how a worker ended; true if it ended badly (an error of its own).
  bool record_exit(worker_proc& w, int status);
  void driver_event(const worker_proc& w, step s, std::string detail = {},
                    std::int64_t ns = monotonic_ns());
  // Workers that exited on their own are replaced (bounded), keeping the contention up.
  void reap();
  // Every fault may end every session (a server restart does): room for that, but bounded.
  int max_replacements() const { return p_.workers * (3 + r_.planned); }
  // Slots left empty while the server was down get their worker now.
  void refill();
  void pump(ms d);
  // Pumps until `done` or `d` passed; returns done().
  template <class F>
  bool pump_until(ms d, F done) {
    auto until = steady::now() + d;
    while (steady::now() < until) {
      pump(0ms);
      if (done()) return true;
    }
    return done();
  }

  worker_proc* slot_of(const std::string& id);
  void stop_all();

  // fault_inject.cpp
  bool inject(int k);

  fault_backend& b_;
  fault f_;
  const run_params& p_;
  std::string lock_;
  std::string reg_path_;
  run_report r_;
  std::vector<std::vector<std::unique_ptr<test::tcp_proxy>>> proxies_;  // per slot, per server
  std::vector<worker_proc> slots_;
  std::vector<worker_proc> finished_;
  std::vector<worker_proc> all_;  // id and log of every worker ever started
  live_view view_;
  std::vector<event> driver_events_;
  std::vector<std::pair<std::int64_t, std::string>> faults_;  // when, and which worker
  std::size_t in_process_orphans_{0};
  std::size_t stray_entries_{0};  // master_down_release: entries a missed removal left behind
  long cancelled_waits_{0};       // cancel_wait: acquires the workers cancelled
  int generation_{0};
  int replaced_{0};
  bool stopping_{false};
  bool server_down_{false};
};

}  // namespace dlock::fault::driver
