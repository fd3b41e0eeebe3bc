#pragma once
// One contender of a fault worker (worker.cpp): its session, its loop over critical sections
// and the history log (history.hpp) that it writes every step to.

#include <chrono>
#include <cstdint>
#include <dlock/dlock.hpp>
#include <memory>
#include <random>
#include <stop_token>
#include <string>

#include "fault/canceller.hpp"
#include "fault/history.hpp"
#include "fault/worker_args.hpp"
#include "fault/worker_grant.hpp"
#include "support/fenced_register.hpp"

namespace dlock::fault::worker {

// One line per write(2) on an O_APPEND descriptor: lines of several threads never interleave.
class event_log {
 public:
  explicit event_log(const std::string& path);  // exits 2 (usage) if it cannot be opened
  ~event_log();
  event_log(const event_log&) = delete;
  event_log& operator=(const event_log&) = delete;
  void put(const event& e);

 private:
  int fd_;
};

enum class outcome { stopped, lost, error };

class contender {
 public:
  contender(const config& c, std::string id, event_log& log, std::stop_token stop)
      : c_(c), id_(std::move(id)), log_(log), stop_(std::move(stop)) {}

  // Opens the session; false (after logging why) if that failed.
  bool open();

  // Takes, uses and releases the lock until stopped, lost, `until`, or --max-ops.
  outcome run(std::chrono::steady_clock::time_point until);

  void close() { session_.close(); }
  long cancelled() const { return cancelled_; }

  // "session <id> [<zk session id> <zk password hex>] [etcd=<lease>,...]": what the driver
  // needs to end this session from the server side.
  std::string session_line();

 private:
  bool release(grant& m, std::uint64_t token);
  bool still_held(const dlock::hold& h, grant& m);
  void pause();

  void put(step s, std::uint64_t token = 0, std::int64_t value = 0, bool accepted = false,
           std::string detail = {}) {
    put_at(test::monotonic_ns(), s, token, value, accepted, std::move(detail));
  }
  void put_at(std::int64_t ns, step s, std::uint64_t token = 0, std::int64_t value = 0,
              bool accepted = false, std::string detail = {});

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

}  // namespace dlock::fault::worker
