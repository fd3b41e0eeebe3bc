#include "fault/worker_contender.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <thread>

#include "backends/etcd/etcd_backend.hpp"
#include "backends/zookeeper/zk_backend.hpp"
#include "core/session_core.hpp"

namespace dlock::fault::worker {

using namespace std::chrono_literals;
using dlock::test::monotonic_ns;

event_log::event_log(const std::string& path)
    : fd_(::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644)) {
  if (fd_ < 0) usage(("cannot open log " + path + ": " + std::strerror(errno)).c_str());
}

event_log::~event_log() { ::close(fd_); }

void event_log::put(const event& e) {
  auto line = dlock::fault::format(e) + "\n";
  if (::write(fd_, line.data(), line.size()) != static_cast<ssize_t>(line.size()))
    std::perror("dlock_fault_worker: log write");
}

bool contender::open() {
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
    std::fprintf(stderr, "dlock_fault_worker %s: cannot open %s: %s\n", id_.c_str(), c_.url.c_str(),
                 ec.message().c_str());
    return false;
  }
  return true;
}

outcome contender::run(std::chrono::steady_clock::time_point until) {
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
      got = m.try_until(std::chrono::steady_clock::now() + std::chrono::milliseconds{c_.wait_ms},
                        stop_, ec);
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

std::string contender::session_line() {
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

// Releases and logs the section's end; false if the hold had lapsed somewhere before the
// unlock (the section then ends as lost).
bool contender::release(grant& m, std::uint64_t token) {
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

bool contender::still_held(const dlock::hold& h, grant& m) {
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

void contender::pause() {
  thread_local std::minstd_rand rng{std::random_device{}()};
  std::uniform_int_distribution<int> d(c_.pause_min_ms, c_.pause_max_ms);
  std::this_thread::sleep_for(std::chrono::milliseconds{d(rng)});
}

void contender::put_at(std::int64_t ns, step s, std::uint64_t token, std::int64_t value,
                       bool accepted, std::string detail) {
  for (auto& ch : detail) {
    if (ch == '\n') ch = ' ';
  }
  log_.put({ns, id_, getpid(), s, token, value, accepted, std::move(detail)});
}

}  // namespace dlock::fault::worker
