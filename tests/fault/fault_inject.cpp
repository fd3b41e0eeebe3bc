// Injecting one fault of a run into the current holder (or a waiter, a link, the server),
// then waiting for the next grant.
#include <signal.h>

#include <thread>

#include "fault/fault_run_state.hpp"

namespace dlock::fault::driver {
namespace {

// Whether `pid` has stopped (state T in /proc/PID/stat) within 200 ms of its SIGSTOP.
bool stopped(pid_t pid) {
  for (int i = 0; i < 200; ++i) {
    if (auto f = test::proc_stat_fields(pid); !f.empty() && f[0] == "T") return true;
    std::this_thread::sleep_for(1ms);
  }
  return false;
}

}  // namespace

bool run::inject(int k) {
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
  // Behind the pooler, holding a permit and leading, the holder is killed and stopped in turn.
  auto what = f_ == fault::pooler || f_ == fault::permit_holder || f_ == fault::permits_two ||
                      f_ == fault::leader
                  ? (k % 2 == 0 ? fault::kill_holder : fault::stop_holder)
                  : f_;
  switch (what) {
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
      // A stop that caught the holder holding a lock that stalls everyone (SQLite's write
      // transaction: stalls_others) is undone, and a holder is stopped again at its next pause.
      for (int tries = 1;; ++tries) {
        w->proc->signal(SIGSTOP);
        if (!stopped(w->proc->pid()) || !b_.stalls_others(w->proc->pid()) || tries == 10) break;
        w->proc->signal(SIGCONT);
        note("stop " + std::to_string(k) + ": caught inside a write transaction; stopped again");
        if (!pump_until(3s, [&] { return (h = view_.holder_in_pause()) && slot_of(h->worker); }))
          return false;
        w = slot_of(h->worker);
        target = w->id;
        ns = monotonic_ns();
      }
      driver_event(*w, step::stopped, {}, ns);
      // Resume only once a newer holder wrote: the fence must then refuse a stale write.
      // If the stop caught the holder inside the register's transaction, the new holder
      // cannot read or write until it resumes: wait for its write only briefly then.
      bool granted = pump_until(b_.ttl() + 3s,
                                [&] { return view_.first_grant_after(ns, target).has_value(); });
      if (!granted) note("stop " + std::to_string(k) + ": no newer grant within TTL + 3 s");
      // With two permits the other one is granted on at once: stay stopped past the lease
      // anyway, so both permits go on without the stopped holder before it resumes.
      if (f_ == fault::permits_two) pump(b_.ttl() + 500ms);
      if (granted && f_ != fault::permits_two &&
          !pump_until(1s, [&] { return view_.newer_write_accepted(h->token, ns); }))
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
      // A worker that learns its session ended exits at once; its replacement could not open
      // a session through the blackhole (its open is bounded, and start_worker blocks until it
      // gives up), so replacements wait for the link to heal, as for a reset.
      server_down_ = true;
      each([](auto& px) { px.blackhole(); });
      pump(b_.ttl() + 500ms);
      each([](auto& px) { px.pass(); });
      server_down_ = false;
      refill();
      break;
    case fault::proxy_delay:
      // A worker whose session expired under the delay now learns it at once (its request in
      // flight is broken off) and exits; a replacement's open (about ten round trips for the
      // SQL advisory modes) cannot finish within its bound at TTL/4 per chunk, so replacements
      // wait for the delay to end, as for a blackhole.
      server_down_ = true;
      each([&](auto& px) { px.delay(b_.ttl() / 4); });
      pump(b_.ttl());
      each([](auto& px) { px.pass(); });
      server_down_ = false;
      refill();
      break;
    case fault::proxy_reset:
      // A holder whose connection is its session (the SQL backends) exits at once; its
      // replacement could not connect through the resetting proxy (and start_worker blocks
      // until it gives up), so replacements wait for the reset to end.
      server_down_ = true;
      each([](auto& px) { px.reset(); });
      pump(100ms);
      each([](auto& px) { px.pass(); });
      server_down_ = false;
      refill();
      break;
    case fault::proxy_outage: {
      // Every worker's link, not only the holder's: the server is gone for everyone (a
      // restart, a dead load balancer), as short as a restart but long enough to outlast the
      // retry policy's attempts. The holder pauses past it (start_worker), so its hold must
      // live through it, and the waiters' acquires are bounded by two TTLs: they must wait
      // through it too. Replacements (of workers whose connection was their session) wait
      // for the link, as for a reset; the next grant is measured from its return.
      server_down_ = true;
      for (auto& per_worker : proxies_) {
        for (auto& px : per_worker) px->reset();
      }
      pump(outage_length(b_.ttl()));
      for (auto& per_worker : proxies_) {
        for (auto& px : per_worker) px->pass();
      }
      server_down_ = false;
      ns = monotonic_ns();
      target.clear();
      refill();
      break;
    }
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
    case fault::terminate_holder: {
      // Three holders in a row, each terminated once it holds: every one must be told lost
      // before the next is granted (the connection is the session).
      for (int i = 1; i < 3; ++i) {
        b_.terminate(w->session);
        faults_.push_back({ns, target});
        pump_until(b_.ttl() + 3s, [&] { return view_.first_grant_after(ns, target).has_value(); });
        std::optional<live_view::holder> next;
        if (!pump_until(3s, [&] {
              return (next = view_.holder_in_pause()) && next->worker != target &&
                     slot_of(next->worker);
            })) {
          note("terminate " + std::to_string(k) + "." + std::to_string(i) +
               ": no next holder within 3 s");
          return true;
        }
        w = slot_of(next->worker);
        target = w->id;
        ns = monotonic_ns();
      }
      b_.terminate(w->session);
      break;
    }
    case fault::pooler:  // mapped above
    case fault::permit_holder:
    case fault::permits_two:
    case fault::leader:
    case fault::expire_waiter: {
      // The holder is held still (far less than its TTL) while the waiter's session ends,
      // so the waiter cannot be granted first and the fault stays an expiry while waiting.
      // It must be stopped inside its pause: once it has written (the log says so before
      // unlock is called), its release may already be on its way to hand the lock to the
      // waiter, and expiring that waiter would be the expire-holder fault instead.
      worker_proc* ww = nullptr;
      worker_proc* stopped = nullptr;
      pump_until(3s, [&] {
        auto hp = view_.holder_in_pause();
        auto* hw = hp ? slot_of(hp->worker) : nullptr;
        if (!hw) return false;
        ww = nullptr;
        for (auto& id : view_.waiters()) {
          if (id != hp->worker && (ww = slot_of(id))) break;
        }
        if (!ww) return false;
        hw->proc->signal(SIGSTOP);
        view_.poll();
        auto still = view_.holder_in_pause();
        if (still && still->worker == hp->worker && view_.waiting(ww->id)) {
          stopped = hw;
          return true;
        }
        hw->proc->signal(SIGCONT);
        return false;
      });
      if (!stopped) {
        note("expire waiter " + std::to_string(k) +
             ": no waiter behind a pausing holder within 3 s");
        return false;
      }
      target = ww->id;
      b_.expire(ww->session);
      stopped->proc->signal(SIGCONT);
      break;
    }
    case fault::client_clock_step: {
      // An hour forward at even injections, back at odd ones (a worker stepped twice jumps two
      // hours), for the holder inside its critical section -- its renewals are then computed
      // from a stepped clock -- and the other way for a waiter, whose session and deadline
      // must not move. Nothing is lost, so the next grant may be anyone's, the holder's own
      // included (the advisory modes are not FIFO: a fresh contender often wins the race).
      const char* ahead = k % 2 == 0 ? "+1h" : "-1h";
      const char* behind = k % 2 == 0 ? "-1h" : "+1h";
      if (!w->clock) {
        note("clock step " + std::to_string(k) + ": the holder was not started faked");
        return false;
      }
      w->clock->set(ahead);
      for (auto& id : view_.waiters()) {
        auto* ww = slot_of(id);
        if (!ww || ww == w || !ww->clock) continue;
        ww->clock->set(behind);
        break;
      }
      pump(b_.ttl() / 2);  // renewals and polls on the stepped clocks
      target.clear();
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
    case fault::cancel_wait:
      // The workers cancel their own waits all the time; the run only has to keep going
      // (a worker dead of SIGPIPE is a worker error) and leave nothing behind.
      pump(1s);
      target.clear();
      break;
    case fault::master_down_release: {
      // One master (a different one each time) refuses the holder's connections from its
      // pause until just after its release: the release misses that master, which then
      // comes back. Reset, not blackhole: a blackholed link would deliver the release late.
      auto& px = *(*links)[static_cast<std::size_t>(k) % links->size()];
      px.reset();
      if (!pump_until(3s, [&] { return !view_.holding(target); }))
        note("master down release " + std::to_string(k) + ": the holder did not release in 3 s");
      pump(50ms);
      px.pass();
      // Its missed removal is retried in the background: within a second of the master's
      // return no entry may be left there that a majority does not also have.
      std::size_t strays = 0;
      if (!pump_until(1500ms, [&] { return (strays = b_.minority_entries(lock_)) == 0; })) {
        note("master down release " + std::to_string(k) + ": " + std::to_string(strays) +
             " entries left on a minority of masters 1.5 s after it came back");
        stray_entries_ += strays;
      }
      break;
    }
    case fault::member_freeze: {
      // A master frozen, not down (SIGSTOP, a stalled disk, a long fork): it accepts
      // connections and never answers. The other two are a majority, so the holds, sessions
      // and acquires must go on as if it were not there.
      note("froze " + b_.freeze_member(k));
      target.clear();
      pump(member_freeze_time);
      b_.thaw_member();
      // One member at a time: the thawed master lost the sessions' keys while it was stopped
      // (they expired on its clock), and the next renewal puts them back. Another freeze before
      // that would leave the sessions on one master of three, a second fault.
      pump(b_.ttl());
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
  if (what == fault::kill_holder) {
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

}  // namespace dlock::fault::driver
