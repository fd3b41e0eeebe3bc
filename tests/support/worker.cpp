// dlock_test_worker: a real process that takes part in multi-process lock tests.
//
//   dlock_test_worker hold URL LOCK [shared]   acquire, print "granted TOKEN", then obey stdin:
//        release        -> unlock, print "released"
//        fence PATH     -> write our token to the fence file PATH; print "write accepted|refused"
//        exit           -> exit without unlocking (the session closes)
//        fork           -> fork a child that only waits (no exec); print "forked PID"
//        spawn          -> start `sleep 600` (fork and exec); print "spawned PID"
//      and print "lost" as soon as the hold's loss signal fires.
//   dlock_test_worker permit URL NAME N         take a permit of semaphore NAME (limit N), print
//        "granted TOKEN", then obey stdin as `hold` does (release, fence PATH, held, exit).
//   dlock_test_worker lead URL NAME VALUE      campaign in election NAME with VALUE, print
//        "granted TOKEN" once leading, then obey stdin as `hold` does, and also:
//        proclaim V     -> proclaim V; print "proclaimed" or "proclaim refused <error code>"
//   dlock_test_worker count URL LOCK FILE N    N times: lock, read the integer in FILE, pause,
//        write it + 1, unlock; print "done".
//   dlock_test_worker try URL LOCK MS          print "trying", try_lock_for(MS), then print
//        "result granted|timed_out|session_expired|<message> ELAPSED_MS" (and unlock).
//   dlock_test_worker signals URL LOCK         reset every signal to its default, open a session,
//        take and release LOCK, close; print "signals unchanged" or "signal N changed" (a
//        library must leave its host's signal dispositions alone).
//   dlock_test_worker clocks                   print "clocks REALTIME_MS BOOTTIME_MS" (what
//        this process's clock_gettime says: a test checks what libfaketime fakes).
//
// The fence file is a tiny fenced resource: it keeps the highest token accepted and refuses a
// lower one, under flock(2) so that the check-and-write is atomic across processes.
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <dlock/dlock.hpp>
#include <fstream>
#include <functional>
#include <iostream>
#include <random>
#include <string>
#include <thread>

namespace {

bool fenced_write(const std::string& path, std::uint64_t token) {
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT, 0644);
  if (fd < 0) return false;
  ::flock(fd, LOCK_EX);
  char buf[32] = {};
  auto n = ::pread(fd, buf, sizeof buf - 1, 0);
  std::uint64_t highest = n > 0 ? std::stoull(std::string(buf, static_cast<std::size_t>(n))) : 0;
  bool ok = token >= highest;
  if (ok) {
    auto s = std::to_string(token);
    (void)::ftruncate(fd, 0);
    (void)::pwrite(fd, s.data(), s.size(), 0);
  }
  ::flock(fd, LOCK_UN);
  ::close(fd);
  return ok;
}

void say(const std::string& line) {
  std::cout << line << std::endl;  // endl: the test reads lines as they come
}

// Announces the grant of `h`, then obeys stdin until EOF (see the header comment); `release`
// gives the hold back.
int obey(const dlock::hold& h, const std::function<void()>& release,
         const std::function<void(const std::string&)>& proclaim = {}) {
  say("granted " + std::to_string(h.token().value));
  h.on_state_change([](dlock::hold_state st) {
    if (st == dlock::hold_state::lost) say("lost");
  });
  std::string cmd;
  while (std::getline(std::cin, cmd)) {
    if (cmd == "release") {
      release();
      say("released");
    } else if (cmd.starts_with("fence ")) {
      say(fenced_write(cmd.substr(6), h.token().value) ? "write accepted" : "write refused");
    } else if (proclaim && cmd.starts_with("proclaim ")) {
      proclaim(cmd.substr(9));
    } else if (cmd == "held") {
      say(h.is_held() ? "held yes" : "held no");
    } else if (cmd == "exit") {
      std::_Exit(0);
    } else if (cmd == "fork") {
      pid_t child = ::fork();
      if (child == 0) {
        for (;;) ::pause();  // async-signal-safe only: the parent has threads
      }
      say("forked " + std::to_string(child));
    } else if (cmd == "spawn") {
      pid_t child = ::fork();
      if (child == 0) {
        ::execl("/bin/sleep", "sleep", "600", static_cast<char*>(nullptr));
        ::_exit(127);
      }
      say("spawned " + std::to_string(child));
    }
  }
  return 0;
}

int hold(const std::string& url, const std::string& name, bool shared) {
  auto s = dlock::session::open(url);
  dlock::shared_mutex m(s, name);
  if (shared)
    m.lock_shared();
  else
    m.lock();
  return obey(m.current_hold(), [&] { m.unlock(); });
}

int permit(const std::string& url, const std::string& name, std::uint32_t n) {
  auto s = dlock::session::open(url);
  dlock::semaphore sem(s, name, n);
  auto p = sem.acquire();
  return obey(p.hold(), [&] { p.release(); });
}

int lead(const std::string& url, const std::string& name, const std::string& value) {
  auto s = dlock::session::open(url);
  dlock::election e(s, name);
  auto l = e.campaign(value);
  return obey(
      l.hold(), [&] { l.resign(); },
      [&](const std::string& v) {
        try {
          l.proclaim(v);
          say("proclaimed");
        } catch (const dlock::system_error& err) {
          say("proclaim refused " + (err.code() == dlock::errc::lock_lost ? std::string("lock_lost")
                                                                          : err.code().message()));
        }
      });
}

int count(const std::string& url, const std::string& name, const std::string& file, int n) {
  auto s = dlock::session::open(url);
  dlock::mutex m(s, name);
  std::minstd_rand rng{std::random_device{}()};
  for (int i = 0; i < n; ++i) {
    std::lock_guard g(m);
    long value = 0;
    {
      std::ifstream in(file);
      in >> value;
    }
    std::this_thread::sleep_for(std::chrono::microseconds{rng() % 300});
    std::ofstream(file, std::ios::trunc) << value + 1;
  }
  say("done");
  return 0;
}

int try_for(const std::string& url, const std::string& name, int timeout_ms) {
  auto s = dlock::session::open(url);
  dlock::mutex m(s, name);
  say("trying");
  auto from = std::chrono::steady_clock::now();
  std::error_code ec;
  bool got = m.try_lock_until(from + std::chrono::milliseconds{timeout_ms}, {}, ec);
  auto took =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - from)
          .count();
  std::string what = got                                  ? "granted"
                     : ec == dlock::errc::timed_out       ? "timed_out"
                     : ec == dlock::errc::session_expired ? "session_expired"
                                                          : ec.message();
  say("result " + what + " " + std::to_string(took));
  if (got) m.unlock();
  return 0;
}

std::int64_t clock_ms(clockid_t id) {
  timespec ts{};
  ::clock_gettime(id, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1'000'000;
}

int signals_untouched(const std::string& url, const std::string& lock) {
  for (int sig = 1; sig < NSIG; ++sig) {
    if (sig != SIGKILL && sig != SIGSTOP) ::signal(sig, SIG_DFL);
  }
  {
    auto s = dlock::session::open(url);
    dlock::mutex m(s, lock);
    m.lock();
    m.unlock();
    s.close();
  }
  for (int sig = 1; sig < NSIG; ++sig) {
    struct sigaction now {};
    if (sig == SIGKILL || sig == SIGSTOP || ::sigaction(sig, nullptr, &now) != 0) continue;
    if (now.sa_handler != SIG_DFL) {
      say("signal " + std::to_string(sig) + " changed");
      return 1;
    }
  }
  say("signals unchanged");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    std::string mode = argc > 1 ? argv[1] : "";
    if (mode == "hold" && argc >= 4)
      return hold(argv[2], argv[3], argc > 4 && std::string(argv[4]) == "shared");
    if (mode == "permit" && argc == 5)
      return permit(argv[2], argv[3], static_cast<std::uint32_t>(std::stoul(argv[4])));
    if (mode == "lead" && argc == 5) return lead(argv[2], argv[3], argv[4]);
    if (mode == "count" && argc == 6) return count(argv[2], argv[3], argv[4], std::stoi(argv[5]));
    if (mode == "clocks") {
      say("clocks " + std::to_string(clock_ms(CLOCK_REALTIME)) + " " +
          std::to_string(clock_ms(CLOCK_BOOTTIME)));
      return 0;
    }
    if (mode == "try" && argc == 5) return try_for(argv[2], argv[3], std::stoi(argv[4]));
    if (mode == "signals" && argc == 4) return signals_untouched(argv[2], argv[3]);
    std::cerr
        << "usage: dlock_test_worker hold URL LOCK [shared] | permit URL NAME N | lead URL NAME "
           "VALUE | count URL "
           "LOCK FILE N | try "
           "URL LOCK MS | signals URL LOCK | clocks\n";
    return 64;
  } catch (const std::exception& e) {
    std::cerr << "dlock_test_worker: " << e.what() << "\n";
    say(std::string("error ") + e.what());
    return 1;
  }
}
