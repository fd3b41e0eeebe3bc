#include "fault/fault_driver.hpp"

#include <signal.h>

#include <algorithm>
#include <sstream>
#include <thread>
#include <vector>

#include "fault/live_view.hpp"
#include "support/fenced_register.hpp"
#include "support/net.hpp"
#include "support/process.hpp"
#include "support/tcp_proxy.hpp"

namespace dlock::fault {
namespace {

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
};

// "session <id> [<zk session id> <zk password hex>]" from the worker.
worker_session parse_session(const std::string& line) {
  worker_session ws;
  std::istringstream in(line.substr(8));
  std::string pw;
  in >> ws.id >> ws.zk_session >> pw;
  for (std::size_t i = 0; i + 1 < pw.size(); i += 2)
    ws.zk_password += static_cast<char>(std::stoi(pw.substr(i, 2), nullptr, 16));
  return ws;
}

class run {
 public:
  run(fault_backend& b, std::string name, fault f, const run_params& p, std::string by_design)
      : b_(b), f_(f), p_(p), lock_("fault/" + name + "/" + test::random_suffix()) {
    r_.backend = std::move(name);
    r_.by_design = std::move(by_design);
    r_.what = f;
    r_.bound = b.ttl() + 1s;
    r_.planned = f == fault::none ? 0 : p.injections;
    slots_.resize(b.multi_process() ? static_cast<std::size_t>(p.workers) : 1);
    reg_path_ = p.scratch_dir + "/register.db";
  }

  run_report go() {
    auto t0 = steady::now();
    (void)test::fenced_register::open(reg_path_);  // created before any worker races to it
    if (needs_proxy(f_)) {
      proxies_.resize(slots_.size());
      for (auto& per_worker : proxies_) {
        for (auto port : b_.server_ports())
          per_worker.push_back(std::make_unique<test::tcp_proxy>(port));
      }
    }
    for (std::size_t i = 0; i < slots_.size(); ++i) start_worker(i);
    pump(500ms);
    for (int k = 0; k < r_.planned; ++k) {
      if (inject(k)) ++r_.injected;
      pump(300ms);
    }
    while (steady::now() < t0 + p_.min_duration) pump(50ms);
    stop_all();
    judge_input in{{}, std::move(driver_events_), reg_path_, faults_, lock_, in_process_orphans_};
    for (auto& w : all_) in.logs.push_back(w.log);
    judge(in, b_, r_);
    r_.took = std::chrono::duration_cast<ms>(steady::now() - t0);
    return std::move(r_);
  }

 private:
  void note(const std::string& s) { r_.notes += "  " + s + "\n"; }

  void start_worker(std::size_t slot) {
    auto id = "w" + std::to_string(slot) + "g" + std::to_string(generation_++);
    auto log = p_.scratch_dir + "/" + id + ".log";
    auto ports = b_.server_ports();
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
    auto proc = std::make_unique<test::child_process>(argv);
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
    all_.push_back({id, log, nullptr, std::nullopt, {}});  // keeps its log for the checker
    slots_[slot] = {id, log, std::move(proc), std::nullopt, std::move(ws)};
  }

  // Records how a worker ended; true if it ended badly (an error of its own).
  bool record_exit(worker_proc& w, int status) {
    w.status = status;
    if (status == 0 || status == 3) return false;  // stopped, or saw its lock lost
    ++r_.worker_errors;
    driver_event(w, step::exited, "status " + std::to_string(status));
    note("worker " + w.id + " exited with status " + std::to_string(status));
    return true;
  }

  void driver_event(const worker_proc& w, step s, std::string detail = {},
                    std::int64_t ns = monotonic_ns()) {
    driver_events_.push_back({ns, w.id, w.proc ? w.proc->pid() : 0, s, 0, 0, false, detail});
  }

  // Workers that exited on their own are replaced (bounded), keeping the contention up.
  void reap() {
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

  // Every fault may end every session (a server restart does): room for that, but bounded.
  int max_replacements() const { return p_.workers * (3 + r_.planned); }

  // Slots left empty while the server was down (or a proxy reset) get their worker now.
  void refill() {
    for (std::size_t i = 0; i < slots_.size(); ++i) {
      if (!slots_[i].proc && replaced_ < max_replacements()) {
        ++replaced_;
        start_worker(i);
      }
    }
  }

  void pump(ms d) {
    auto until = steady::now() + d;
    do {
      view_.poll();
      reap();
      std::this_thread::sleep_for(2ms);
    } while (steady::now() < until);
  }

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

  worker_proc* slot_of(const std::string& id) {
    for (auto& w : slots_) {
      if (w.proc && w.id == id && !w.status) return &w;
    }
    return nullptr;
  }

  bool inject(int k) {
    std::optional<live_view::holder> h;
    if (!pump_until(3s, [&] { return (h = view_.holder_in_pause()) && slot_of(h->worker); })) {
      note("injection " + std::to_string(k) + ": no holder found within 3 s");
      return false;
    }
    auto* w = slot_of(h->worker);
    auto target = w->id;
    std::vector<std::unique_ptr<test::tcp_proxy>>* links = nullptr;
    if (!proxies_.empty()) links = &proxies_[static_cast<std::size_t>(w - slots_.data())];
    auto each = [&](auto fn) {
      for (auto& px : *links) fn(*px);
    };
    auto ns = monotonic_ns();
    switch (f_) {
      case fault::none:
        return false;
      case fault::kill_holder: {
        w->proc->signal(SIGKILL);
        driver_event(*w, step::killed, {}, ns);
        if (auto st = w->proc->wait(5s)) w->status = *st;
        view_.poll();
        view_.ended(target);
        break;
      }
      case fault::stop_holder:
      case fault::stop_holder_late_check: {
        w->proc->signal(SIGSTOP);
        driver_event(*w, step::stopped, {}, ns);
        // Resume only once a newer holder wrote: the fence must then refuse a stale write.
        // If the stop caught the holder inside the register's transaction, the new holder
        // cannot read or write until it resumes: wait for its write only briefly then.
        bool granted = pump_until(b_.ttl() + 3s,
                                  [&] { return view_.first_grant_after(ns, target).has_value(); });
        if (!granted) note("stop " + std::to_string(k) + ": no newer grant within TTL + 3 s");
        if (granted && !pump_until(1s, [&] { return view_.newer_write_accepted(h->token, ns); }))
          note("stop " + std::to_string(k) +
               ": newer holder could not write (stopped in the "
               "register's transaction?)");
        w = slot_of(target);
        if (w) {
          driver_event(*w, step::continued);
          w->proc->signal(SIGCONT);
        }
        break;
      }
      case fault::proxy_blackhole:
        each([](auto& px) { px.blackhole(); });
        pump(b_.ttl() + 500ms);
        each([](auto& px) { px.pass(); });
        break;
      case fault::proxy_delay:
        each([&](auto& px) { px.delay(b_.ttl() / 4); });
        pump(b_.ttl());
        each([](auto& px) { px.pass(); });
        break;
      case fault::proxy_reset:
        // A holder whose connection is its session (the SQL backends) exits at once; its
        // replacement could not connect through the resetting proxy (and start_worker
        // blocks until it gives up), so replacements wait for the reset to end.
        server_down_ = true;
        each([](auto& px) { px.reset(); });
        pump(100ms);
        each([](auto& px) { px.pass(); });
        server_down_ = false;
        refill();
        break;
      case fault::proxy_drop_reply: {
        // Alternate between the holder (its renewal or release is hit) and a waiter (its
        // enqueue or poll is hit).
        auto waiters = view_.waiters();
        if (k % 2 == 1 && !waiters.empty()) {
          if (auto* ww = slot_of(waiters.front())) {
            target = ww->id;
            links = &proxies_[static_cast<std::size_t>(ww - slots_.data())];
          }
        }
        // One server's link (Redlock: a different master each time).
        auto& px = *(*links)[static_cast<std::size_t>(k) % links->size()];
        auto before = px.dropped_replies();
        px.drop_next_reply();
        if (!pump_until(3s, [&] { return px.dropped_replies() > before; }))
          note("drop reply: nothing was sent within 3 s");
        px.pass();
        break;
      }
      case fault::expire_holder:
        b_.expire(w->session);
        break;
      case fault::expire_waiter: {
        worker_proc* ww = nullptr;
        pump_until(2s, [&] {
          for (auto& id : view_.waiters()) {
            if ((ww = slot_of(id)) && id != target) return true;
          }
          return false;
        });
        if (!ww) {
          note("expire waiter " + std::to_string(k) + ": no waiter found within 2 s");
          return false;
        }
        target = ww->id;
        // The holder is held still meanwhile (far less than its TTL), so the waiter cannot be
        // granted before its session ends: the fault stays an expiry while waiting.
        w->proc->signal(SIGSTOP);
        b_.expire(ww->session);
        w->proc->signal(SIGCONT);
        break;
      }
      case fault::server_restart:
      case fault::server_restart_nosave: {
        // No new worker can open a session while the server is down: replacements wait.
        server_down_ = true;
        b_.stop_server(f_ == fault::server_restart);
        pump(1s);
        b_.start_server();
        server_down_ = false;
        ns = monotonic_ns();  // measured from when the server is back
        target.clear();
        refill();
        break;
      }
      case fault::member_kill: {
        note("killed " + b_.kill_member(k));
        target.clear();
        pump_until(b_.ttl() + 3s, [&] { return view_.first_grant_after(ns, "").has_value(); });
        pump(b_.member_down_time());
        b_.restart_member();
        break;
      }
    }
    faults_.push_back({ns, target});
    pump_until(b_.ttl() + 3s, [&] { return view_.first_grant_after(ns, target).has_value(); });
    if (f_ == fault::kill_holder) {
      // Replace the killed worker at once.
      for (std::size_t i = 0; i < slots_.size(); ++i) {
        if (slots_[i].id == target) {
          finished_.push_back(std::move(slots_[i]));
          slots_[i] = {};
          start_worker(i);
        }
      }
    }
    return true;
  }

  void stop_all() {
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
        ++r_.worker_errors;
        w.proc->signal(SIGKILL);
        w.status = w.proc->wait(5s).value_or(-1);
      }
      while (auto line = w.proc->read_line(200ms)) {
        if (line->starts_with("raw_entries ")) in_process_orphans_ += std::stoul(line->substr(12));
      }
      finished_.push_back(std::move(w));
    }
    slots_.clear();
    if (auto took = steady::now() - from; took > b_.ttl())
      note("stopping the workers took " +
           std::to_string(std::chrono::duration_cast<ms>(took).count()) + " ms");
  }

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
  int generation_{0};
  int replaced_{0};
  bool stopping_{false};
  bool server_down_{false};
};

}  // namespace

bool run_report::ok() const {
  // A fault the backend cannot survive by design: the run only has to show what happened,
  // and that new sessions work afterwards.
  // The lock may break (overlap, late loss signal, tokens restarting); the fence must not.
  if (!by_design.empty()) return resource_violations == 0 && sections > 0 && orphans == 0;
  return violations == 0 && orphans == 0 && worker_errors == 0 && injected == planned &&
         !grant_missing && sections > 0 && (!worst_to_grant || *worst_to_grant <= bound);
}

run_report run_one(fault_backend& backend, const std::string& backend_name, fault f,
                   const run_params& p, const std::string& by_design) {
  return run(backend, backend_name, f, p, by_design).go();
}

}  // namespace dlock::fault
