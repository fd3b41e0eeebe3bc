// The worker processes of a fault run: starting them (and reading their session identity),
// replacing those that exit, and stopping them all at the end.
#include <signal.h>

#include <cstdio>
#include <sstream>
#include <string>

#include "fault/fault_run_state.hpp"

namespace dlock::fault::driver {
namespace {

// Every thread's stack of a hung worker, where gdb is installed: a hang seen once in CI is
// otherwise a line saying only that it happened.
std::string stacks_of(pid_t pid) {
  const auto cmd = "timeout 30 gdb -p " + std::to_string(pid) +
                   " -batch -ex 'thread apply all bt 30' 2>/dev/null | grep -E '^(Thread|#)'";
  std::string out = "its threads (gdb):\n";
  if (FILE* p = ::popen(cmd.c_str(), "r")) {
    char line[512];
    for (int n = 0; n < 300 && std::fgets(line, sizeof line, p); ++n)
      out += "    " + std::string(line);
    ::pclose(p);
  }
  return out;
}

}  // namespace

// "session <id> [<zk session id> <zk password hex>] [etcd=<lease>,...]" from the worker.
worker_session parse_session(const std::string& line) {
  worker_session ws;
  auto rest = line.substr(8);
  if (auto at = rest.find(" etcd="); at != std::string::npos) {
    std::istringstream leases(rest.substr(at + 6));
    for (std::string id; std::getline(leases, id, ',');) ws.etcd_leases.push_back(std::stoll(id));
    rest.erase(at);
  }
  std::istringstream in(rest);
  std::string pw;
  in >> ws.id >> ws.zk_session >> pw;
  for (std::size_t i = 0; i + 1 < pw.size(); i += 2)
    ws.zk_password += static_cast<char>(std::stoi(pw.substr(i, 2), nullptr, 16));
  return ws;
}

void run::start_worker(std::size_t slot) {
  auto id = "w" + std::to_string(slot) + "g" + std::to_string(generation_++);
  auto log = p_.scratch_dir + "/" + id + ".log";
  auto ports = needs_pooler(f_) ? b_.pooler_ports() : b_.server_ports();
  if (!proxies_.empty()) {
    ports.clear();
    for (auto& px : proxies_[slot]) ports.push_back(px->port());
  }
  auto bound_s =
      std::chrono::duration<double>(p_.min_duration + r_.planned * (b_.ttl() + 4s) + 30s);
  std::vector<std::string> argv{p_.worker_exe,
                                "--url",
                                b_.url(ports),
                                "--lock",
                                lock_,
                                "--register",
                                reg_path_,
                                "--log",
                                log,
                                "--id",
                                id,
                                "--max-seconds",
                                std::to_string(bound_s.count())};
  if (!b_.multi_process()) argv.insert(argv.end(), {"--threads", std::to_string(p_.workers)});
  if (f_ == fault::stop_holder_late_check) argv.push_back("--late-check");
  if (f_ == fault::cancel_wait) argv.push_back("--cancel-waits");
  if (f_ == fault::permit_holder) argv.insert(argv.end(), {"--permits", "1"});
  if (f_ == fault::permits_two) argv.insert(argv.end(), {"--permits", "2", "--no-register"});
  if (f_ == fault::leader) argv.push_back("--elect");
  if (f_ == fault::proxy_outage) {
    // The holder pauses past the outage (which starts in its pause), and a waiter waits two
    // TTLs, past the outage and the holders ahead of it.
    auto pause = std::to_string((outage_length(b_.ttl()) + 300ms).count());
    argv.insert(argv.end(), {"--pause-ms", pause + ":" + pause, "--wait-ms",
                             std::to_string((2 * b_.ttl()).count())});
  }
  test::child_process::options opt;
  std::shared_ptr<test::stepped_clock> clock;
  if (f_ == fault::client_clock_step) {
    // Started faked (offset +0), so the driver can step this worker's wall clock while it
    // runs; its monotonic and boot clocks stay real.
    clock = std::make_shared<test::stepped_clock>(p_.scratch_dir + "/" + id + ".clock");
    opt.env = clock->env();
  }
  auto proc = std::make_unique<test::child_process>(argv, opt);
  worker_session ws;
  bool ready = false;
  for (int lines = 0; lines < 100 && !ready; ++lines) {
    auto line = proc->read_line(15s);
    if (!line) break;
    if (line->starts_with("session ") && ws.id.empty()) ws = parse_session(*line);
    ready = *line == "ready";
  }
  if (!ready) {
    ++r_.worker_errors;
    note("worker " + id + " did not start");
  }
  view_.add_worker(id, log);
  all_.push_back({id, log, nullptr, std::nullopt, {}, {}});  // keeps its log for the checker
  slots_[slot] = {id, log, std::move(proc), std::nullopt, std::move(ws), std::move(clock)};
}

bool run::record_exit(worker_proc& w, int status) {
  w.status = status;
  if (status == 3) {
    ++r_.workers_lost;
    if (f_ == fault::client_clock_step) note("worker " + w.id + " lost its lock or session");
  }
  if (status == 0 || status == 3) return false;  // stopped, or saw its lock lost
  ++r_.worker_errors;
  driver_event(w, step::exited, "status " + std::to_string(status));
  note("worker " + w.id + " exited with status " + std::to_string(status));
  return true;
}

void run::driver_event(const worker_proc& w, step s, std::string detail, std::int64_t ns) {
  driver_events_.push_back({ns, w.id, w.proc ? w.proc->pid() : 0, s, 0, 0, false, detail});
}

void run::reap() {
  for (std::size_t i = 0; i < slots_.size(); ++i) {
    auto& w = slots_[i];
    if (!w.proc || w.status || w.proc->running()) continue;
    record_exit(w, *w.proc->wait(0ms));
    view_.poll();  // its last lines, before it is marked gone
    view_.ended(w.id);
    finished_.push_back(std::move(w));
    slots_[i] = {};
    if (!stopping_ && !server_down_ && replaced_ < max_replacements()) {
      ++replaced_;
      start_worker(i);
    }
  }
}

void run::refill() {
  for (std::size_t i = 0; i < slots_.size(); ++i) {
    if (!slots_[i].proc && replaced_ < max_replacements()) {
      ++replaced_;
      start_worker(i);
    }
  }
}

void run::pump(ms d) {
  auto until = steady::now() + d;
  do {
    view_.poll();
    reap();
    std::this_thread::sleep_for(2ms);
  } while (steady::now() < until);
}

worker_proc* run::slot_of(const std::string& id) {
  for (auto& w : slots_) {
    if (w.proc && w.id == id && !w.status) return &w;
  }
  return nullptr;
}

void run::stop_all() {
  auto from = steady::now();
  stopping_ = true;
  for (auto& w : slots_) {
    if (!w.proc || w.status) continue;
    w.proc->signal(SIGCONT);
    w.proc->close_stdin();
  }
  for (auto& w : slots_) {
    if (!w.proc || w.status) continue;
    if (auto st = w.proc->wait(b_.ttl() + 10s)) {
      record_exit(w, *st);
    } else {
      driver_event(w, step::killed, "did not stop");
      note("worker " + w.id + " did not stop on stdin EOF; killed");
      note(stacks_of(w.proc->pid()));
      ++r_.worker_errors;
      w.proc->signal(SIGKILL);
      w.status = w.proc->wait(5s).value_or(-1);
    }
    while (auto line = w.proc->read_line(200ms)) {
      if (line->starts_with("raw_entries ")) in_process_orphans_ += std::stoul(line->substr(12));
      if (line->starts_with("cancelled_waits ")) cancelled_waits_ += std::stol(line->substr(16));
    }
    finished_.push_back(std::move(w));
  }
  slots_.clear();
  if (auto took = steady::now() - from; took > b_.ttl())
    note("stopping the workers took " +
         std::to_string(std::chrono::duration_cast<ms>(took).count()) + " ms");
}

}  // namespace dlock::fault::driver
