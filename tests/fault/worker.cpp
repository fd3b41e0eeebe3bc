// dlock_fault_worker: one (or, for in-process backends, several) contender(s) in a fault run.
//
//   dlock_fault_worker --url URL --lock NAME --register PATH --log PATH --id ID
//                      [--threads N] [--max-ops N] [--max-seconds S] [--pause-ms MIN:MAX]
//                      [--late-check] [--cancel-waits] [--permits N [--no-register]]
//                      [--elect]
//
// Each contender loops: acquire -> read the fenced register with its fencing token -> pause ->
// check its loss signal -> write value+1 with its token -> release, logging every step
// (history.hpp). Before "ready" it prints a `session` line per contender (see session_line).
// With
// --late-check the loss signal is checked BEFORE the pause instead of after it: the classic
// "checked, then got paused" holder, whose stale write only the fence can stop.
// With --permits N each contender takes one permit of a semaphore of N instead of the mutex
// (N = 1: the permit recipe must exclude exactly as the lock does; the checker is the same).
// With --elect each contender campaigns in an election of that name instead (its value: its
// id), leads while it holds, and resigns; the checker is the mutex's.
// --no-register: no fenced register (N > 1 holders share no one resource): acquire -> pause
// -> check its loss signal -> release, judged by the checker's limit rules.
// With --cancel-waits 31 acquires in 32 are cancelled between their start and 120 us into
// their wait (from a second thread, as an application's shutdown would), racing the wait's own
// requests: the library must neither die of it (SIGPIPE is at its default disposition here) nor
// leave an entry. Stops when its lock is lost, on stdin EOF, or at the count/time bound. Prints
// "ready" once every contender has opened its session. Exit: 0 stopped, 3 lock lost, 2 error.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <dlock/dlock.hpp>
#include <latch>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "backends/etcd/etcd_backend.hpp"
#include "backends/memory/memory_backend.hpp"
#include "backends/zookeeper/zk_backend.hpp"
#include "core/session_core.hpp"
#include "fault/canceller.hpp"
#include "fault/history.hpp"
#include "fault/worker_grant.hpp"
#include "support/fenced_register.hpp"

namespace {

using namespace std::chrono_literals;
using dlock::fault::canceller;
using dlock::fault::event;
using dlock::fault::grant;
using dlock::fault::step;
using dlock::test::monotonic_ns;

struct config {
  std::string url, lock, reg, log, id;
  int threads{1};
  long max_ops{1'000'000};
  double max_seconds{60};
  int pause_min_ms{15}, pause_max_ms{40};
  bool late_check{false};
  bool cancel_waits{false};
  std::uint32_t permits{0};
  bool elect{false};
  bool no_register{false};
};

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
  if (c.threads < 1 || c.pause_min_ms < 0 || c.pause_max_ms < c.pause_min_ms)
    usage("bad --threads or --pause-ms");
  return c;
}

// One line per write(2) on an O_APPEND descriptor: lines of several threads never interleave.
class event_log {
 public:
  explicit event_log(const std::string& path)
      : fd_(::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644)) {
    if (fd_ < 0) usage(("cannot open log " + path + ": " + std::strerror(errno)).c_str());
  }
  ~event_log() { ::close(fd_); }
  void put(const event& e) {
    auto line = dlock::fault::format(e) + "\n";
    if (::write(fd_, line.data(), line.size()) != static_cast<ssize_t>(line.size()))
      std::perror("dlock_fault_worker: log write");
  }

 private:
  int fd_;
};

enum class outcome { stopped, lost, error };

class contender {
 public:
  contender(const config& c, std::string id, event_log& log, std::stop_token stop)
      : c_(c), id_(std::move(id)), log_(log), stop_(std::move(stop)) {}

  // Opens the session; false (after logging why) if that failed.
  bool open() {
    // A replacement worker may start while the backend has no leader (a killed cluster
    // member): a client retries an unavailable backend, so the worker does too, for a while.
    std::error_code ec;
    auto until = std::chrono::steady_clock::now() + std::chrono::seconds{15};
    for (;;) {
      session_ = dlock::session::open(c_.url, {.description = "fault worker " + id_}, ec);
      if (session_ || ec != dlock::errc::backend_unavailable ||
          std::chrono::steady_clock::now() >= until) {
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds{200});
    }
    if (!session_) {
      std::fprintf(stderr, "dlock_fault_worker %s: cannot open %s: %s\n", id_.c_str(),
                   c_.url.c_str(), ec.message().c_str());
      return false;
    }
    return true;
  }

  outcome run(std::chrono::steady_clock::time_point until) {
    auto reg = dlock::test::fenced_register::open(c_.reg);
    grant m(session_, c_.lock, c_.permits, c_.elect, id_);
    for (long op = 0; op < c_.max_ops; ++op) {
      if (stop_.stop_requested() || std::chrono::steady_clock::now() >= until)
        return outcome::stopped;
      put(step::acquire_start);
      std::error_code ec;
      bool got = false;
      if (c_.cancel_waits && cancel_dist_(rng_) < 31) {
        // 31 acquires in 32 are cancelled, at a random moment between their start and 120 us
        // into their wait. The wait starts after the enqueue's round trip, estimated as half
        // of what a cancelled attempt takes (enqueue, then removal).
        std::stop_source attempt;
        std::stop_callback forward(stop_, [&attempt] { attempt.request_stop(); });
        std::uniform_int_distribution<long> delay(0, enqueue_ns_ + 120'000);
        canceller_->arm(attempt, std::chrono::nanoseconds{delay(rng_)});
        auto t0 = std::chrono::steady_clock::now();
        got = m.try_until(t0 + 2s, attempt.get_token(), ec);
        canceller_->settle();
        if (!got && ec == dlock::errc::cancelled) {
          ++cancelled_;
          auto half = std::chrono::duration_cast<std::chrono::nanoseconds>(
                          std::chrono::steady_clock::now() - t0)
                          .count() /
                      2;
          enqueue_ns_ = std::clamp<long>((7 * enqueue_ns_ + half) / 8, 0, 2'000'000);
        }
      } else {
        got = m.try_until(std::chrono::steady_clock::now() + 2s, stop_, ec);
      }
      if (!got) {
        put(step::acquire_failed, 0, 0, false,
            ec.message() + " (" + dlock::last_error_message() + ")");
        if (ec == dlock::errc::timed_out || ec == dlock::errc::cancelled ||
            ec == dlock::errc::backend_unavailable)
          continue;
        return ec == dlock::errc::session_expired ? outcome::lost : outcome::error;
      }
      auto h = m.current_hold();
      auto token = h.token().value;
      put(step::granted, token);
      if (c_.no_register) {
        // The read's place in the log marks "in its critical section's pause" for the driver
        // (which picks a holder to kill or stop there); there is no resource to read.
        put(step::read, 0, 0, true);
        pause();
        if (!still_held(h, m)) return outcome::lost;
        if (!release(m, token)) return outcome::lost;
        continue;
      }
      auto value = reg.read(token);
      put(step::read, 0, value.value_or(0), value.has_value());
      if (!value) {
        // The resource has seen a newer token: this holder is stale, whatever it believes.
        auto release_ns = monotonic_ns();
        m.unlock(ec);
        if (ec == dlock::errc::lock_lost) put_at(release_ns, step::lost, token, 0, false, "unlock");
        put_at(release_ns, step::released, token);
        return outcome::lost;
      }
      if (c_.late_check && !still_held(h, m)) return outcome::lost;
      pause();
      if (!c_.late_check && !still_held(h, m)) return outcome::lost;
      auto write_ns = monotonic_ns();
      bool accepted = reg.try_write(token, *value + 1);
      put_at(write_ns, step::write, token, *value + 1, accepted);
      if (!release(m, token)) return outcome::lost;
      // A refused write while the library still says "held" is left for the checker to
      // judge (it is an overlap); either way a stale holder stops here.
      if (!accepted) return outcome::lost;
    }
    return outcome::stopped;
  }

  void close() { session_.close(); }
  long cancelled() const { return cancelled_; }

  // "session <id> [<zk session id> <zk password hex>] [etcd=<lease>,...]": what the driver
  // needs to end this session from the server side.
  std::string session_line() {
    auto line = "session " + session_.id();
    if (auto zk = dlock::detail::zookeeper_identity(session_.core()->backend())) {
      static constexpr char hex[] = "0123456789abcdef";
      line += " " + std::to_string(zk->session_id) + " ";
      for (unsigned char ch : zk->password) {
        line += hex[ch >> 4];
        line += hex[ch & 15];
      }
    }
    // etcd: the session's leases (revoking them ends it, as the fixtures' expire() does).
    if (auto leases = dlock::detail::etcd_leases(session_.core()->backend())) {
      line += " etcd=";
      for (std::size_t i = 0; i < leases->size(); ++i) {
        line += (i ? "," : "") + std::to_string((*leases)[i]);
      }
    }
    return line;
  }

 private:
  // Releases and logs the section's end; false if the hold had lapsed somewhere before the
  // unlock (the section then ends as lost).
  bool release(grant& m, std::uint64_t token) {
    std::error_code ec;
    auto release_ns = monotonic_ns();
    m.unlock(ec);
    if (ec == dlock::errc::lock_lost) {
      put_at(release_ns, step::lost, token, 0, false, "unlock");
      put_at(release_ns, step::released, token);
      return false;
    }
    put_at(release_ns, step::released, token, 0, false, ec ? ec.message() : "");
    return true;
  }

  bool still_held(const dlock::hold& h, grant& m) {
    auto ns = monotonic_ns();  // before the check: a "held" answer was true at least until ns
    if (h.is_held() && !h.lost_token().stop_requested()) {
      put_at(ns, step::checked, h.token().value);
      return true;
    }
    put_at(ns, step::lost, h.token().value, 0, false, "check");
    std::error_code ec;
    m.unlock(ec);
    put_at(ns, step::released, h.token().value);
    return false;
  }

  void pause() {
    thread_local std::minstd_rand rng{std::random_device{}()};
    std::uniform_int_distribution<int> d(c_.pause_min_ms, c_.pause_max_ms);
    std::this_thread::sleep_for(std::chrono::milliseconds{d(rng)});
  }

  void put(step s, std::uint64_t token = 0, std::int64_t value = 0, bool accepted = false,
           std::string detail = {}) {
    put_at(monotonic_ns(), s, token, value, accepted, std::move(detail));
  }
  void put_at(std::int64_t ns, step s, std::uint64_t token = 0, std::int64_t value = 0,
              bool accepted = false, std::string detail = {}) {
    for (auto& ch : detail) {
      if (ch == '\n') ch = ' ';
    }
    log_.put({ns, id_, getpid(), s, token, value, accepted, std::move(detail)});
  }

  const config& c_;
  std::string id_;
  event_log& log_;
  std::stop_token stop_;
  dlock::session session_;
  std::unique_ptr<canceller> canceller_ = c_.cancel_waits ? std::make_unique<canceller>() : nullptr;
  std::minstd_rand rng_{std::random_device{}()};
  std::uniform_int_distribution<int> cancel_dist_{0, 31};
  long enqueue_ns_{100'000};  // estimated time from an acquire's start to its wait
  long cancelled_{0};
};

}  // namespace

int main(int argc, char** argv) {
  auto c = parse_args(argc, argv);
  // A library must not kill its host with SIGPIPE whatever the host's disposition; the
  // default one is where it would (an inherited SIG_IGN would hide it).
  ::signal(SIGPIPE, SIG_DFL);
  event_log log(c.log);
  std::stop_source stop;
  // stdin EOF is the driver's "stop": detached, since a blocking read cannot be interrupted.
  std::thread([stop]() mutable {  // a copy shares the state and outlives main's scope
    char buf[64];
    while (::read(0, buf, sizeof buf) > 0) {
    }
    stop.request_stop();
  })
      .detach();

  std::vector<std::unique_ptr<contender>> cs;
  for (int i = 0; i < c.threads; ++i) {
    auto id = c.threads == 1 ? c.id : c.id + "." + std::to_string(i);
    cs.push_back(std::make_unique<contender>(c, id, log, stop.get_token()));
    if (!cs.back()->open()) return 2;
    std::printf("%s\n", cs.back()->session_line().c_str());
  }
  std::printf("ready\n");
  std::fflush(stdout);

  auto until = std::chrono::steady_clock::now() +
               std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                   std::chrono::duration<double>(c.max_seconds));
  std::atomic<int> worst{0};  // 0 stopped, 3 lost, 2 error
  {
    std::vector<std::jthread> threads;
    for (auto& ct : cs) {
      threads.emplace_back([&, p = ct.get()] {
        int code = 0;
        try {
          auto o = p->run(until);
          code = o == outcome::lost ? 3 : o == outcome::error ? 2 : 0;
        } catch (const std::exception& e) {
          std::fprintf(stderr, "dlock_fault_worker: %s\n", e.what());
          code = 2;
        }
        int cur = worst.load();
        while (code > 0 && (cur == 0 || code < cur) && !worst.compare_exchange_weak(cur, code)) {
        }
      });
    }
  }
  // An in-process store dies with this process, so the raw look for orphans happens here:
  // every contender has left its loop, so any entry left is one nobody will remove.
  if (c.url.starts_with("memory://")) {
    auto name = c.url.substr(9, c.url.find('?') - 9);
    std::printf("raw_entries %zu\n", dlock::detail::memory_raw_entries(name, c.lock));
    std::fflush(stdout);
  }
  if (c.cancel_waits) {
    long n = 0;
    for (auto& ct : cs) n += ct->cancelled();
    std::printf("cancelled_waits %ld\n", n);
    std::fflush(stdout);
  }
  for (auto& ct : cs) ct->close();
  return worst.load();
}
