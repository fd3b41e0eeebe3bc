#include "backends/mysql/my_bell_open.hpp"

#include <condition_variable>
#include <mutex>
#include <optional>
#include <system_error>
#include <thread>

#include "core/open_budget.hpp"

namespace dlock::detail::my {
namespace {

using steady = std::chrono::steady_clock;

// What the connecting thread and its waiter share; the last of the two to let go frees it.
struct pending {
  std::mutex mu;
  std::condition_variable_any done_cv;
  bool done{false};
  bool abandoned{false};  // the waiter gave up: the connection, if any, is closed
  std::unique_ptr<conn> c;
};

std::unique_ptr<conn> connect(const target& t, std::chrono::milliseconds timeout,
                              steady::time_point until) {
  std::optional<open_attempt_scope> bounded;
  if (until != steady::time_point::max()) bounded.emplace(until);
  auto c = conn::open(t, timeout);
  return c ? std::make_unique<conn>(std::move(*c)) : nullptr;
}

}  // namespace

std::unique_ptr<conn> open_aside(const target& t, std::chrono::milliseconds timeout,
                                 steady::time_point until, const std::stop_token& stop,
                                 const std::stop_token& closing) {
  auto p = std::make_shared<pending>();
  try {
    std::thread([p, t, timeout, until] {
      auto c = connect(t, timeout, until);
      std::lock_guard lk(p->mu);
      if (!p->abandoned) p->c = std::move(c);
      p->done = true;
      p->done_cv.notify_all();
    }).detach();
  } catch (const std::system_error&) {
    return connect(t, timeout, until);  // no thread to be had: here, as a plain open
  }
  // Before the lock: a close already requested runs the callback here, at once.
  std::stop_callback on_close(closing, [&p] {
    std::lock_guard g(p->mu);
    p->done_cv.notify_all();
  });
  std::unique_lock lk(p->mu);
  p->done_cv.wait_until(lk, stop, until, [&] { return p->done || closing.stop_requested(); });
  if (p->done) return std::move(p->c);
  p->abandoned = true;
  return nullptr;
}

}  // namespace dlock::detail::my
