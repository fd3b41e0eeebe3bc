#include "core/exit_guard.hpp"

#include <dlfcn.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <vector>

#include "core/session_core.hpp"

namespace dlock::detail::exit_guard {
namespace {

using steady = std::chrono::steady_clock;

// Never destroyed: the handler runs among static destructors, in an order nobody controls.
struct state {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::weak_ptr<session_core>> sessions;
  std::vector<std::shared_ptr<session_core>> kept;  // see on_exit
  std::vector<session_core*> closing;
  std::size_t in_flight{0};
  bool registered{false};
  bool registered_after_openssl{false};
};
state& the() {
  static auto* s = new state;
  return *s;
}
std::atomic<bool> leaving{false};

// How long the handler lets calls in flight finish once interrupted: they return within
// milliseconds; this only bounds a client library that ignores the interruption.
constexpr std::chrono::milliseconds drain_limit{500};

void on_exit() noexcept {
  if (leaving.exchange(true)) return;  // registered twice: once is enough
  auto& st = the();
  std::vector<std::shared_ptr<session_core>> live;
  {
    std::lock_guard lk(st.mu);
    for (auto& w : st.sessions) {
      if (auto s = w.lock()) live.push_back(std::move(s));
    }
  }
  for (auto& s : live) s->abandon_for_exit();
  std::unique_lock lk(st.mu);
  // Under the lock: a finisher deletes its session only after leaving `closing`.
  for (auto* s : st.closing) s->abandon_for_exit();
  st.cv.wait_for(lk, drain_limit, [&] { return st.in_flight == 0; });
  // `live` may hold the last references: those sessions are left to the process's end, never
  // closed here (closing would start the very calls this handler stops).
  for (auto& s : live) st.kept.push_back(std::move(s));
}

// OpenSSL's cleanup is an atexit handler registered when libcrypto initialises; handlers run
// in reverse order, so ours must come after it. libcrypto is loaded with the client libraries
// that use it (libpq) but may initialise late (the first SCRAM login): initialise it now.
bool openssl_ready() noexcept {
  using init_fn = int (*)(std::uint64_t, const void*);
  auto* init = reinterpret_cast<init_fn>(::dlsym(RTLD_DEFAULT, "OPENSSL_init_crypto"));
  if (init == nullptr) return false;
  (void)init(0, nullptr);
  return true;
}

}  // namespace

void track(const std::shared_ptr<session_core>& s) noexcept {
  try {
    auto& st = the();
    std::lock_guard lk(st.mu);
    if (!st.registered_after_openssl) {
      const bool ssl = openssl_ready();
      if (!st.registered || ssl) {
        if (std::atexit(&on_exit) == 0) {
          st.registered = true;
          st.registered_after_openssl = ssl;
        }
      }
    }
    std::erase_if(st.sessions, [](const auto& w) { return w.expired(); });
    st.sessions.push_back(s);
  } catch (...) {
    // Out of memory: this session goes untracked, as every session did before.
  }
}

bool exiting() noexcept { return leaving.load(); }

background_call::background_call() noexcept {
  auto& st = the();
  std::lock_guard lk(st.mu);
  ++st.in_flight;
}

background_call::~background_call() {
  auto& st = the();
  {
    std::lock_guard lk(st.mu);
    --st.in_flight;
  }
  st.cv.notify_all();
}

closing::closing(session_core* s) noexcept : s_(s) {
  auto& st = the();
  std::lock_guard lk(st.mu);
  try {
    st.closing.push_back(s_);
  } catch (...) {
    s_ = nullptr;  // out of memory: not interrupted at exit, only waited for
  }
  if (s_ && leaving.load()) s_->abandon_for_exit();
}

closing::~closing() {
  if (!s_) return;
  auto& st = the();
  std::lock_guard lk(st.mu);
  std::erase(st.closing, s_);
}

std::size_t calls_in_flight() noexcept {
  auto& st = the();
  std::lock_guard lk(st.mu);
  return st.in_flight;
}

}  // namespace dlock::detail::exit_guard
