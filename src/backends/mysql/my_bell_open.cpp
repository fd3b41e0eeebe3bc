#include "backends/mysql/my_bell_open.hpp"

#include <mutex>
#include <optional>

#include "core/open_budget.hpp"
#include "core/run_aside.hpp"

namespace dlock::detail::my {
namespace {

using steady = std::chrono::steady_clock;

// What the connecting thread hands its waiter; the last of the two to let go frees it.
struct slot {
  std::mutex mu;
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
  auto s = std::make_shared<slot>();
  (void)run_aside(
      [s, t, timeout, until] {
        auto c = connect(t, timeout, until);
        std::lock_guard lk(s->mu);
        if (!s->abandoned) s->c = std::move(c);
      },
      until, stop, closing);
  std::lock_guard lk(s->mu);
  s->abandoned = true;  // a connection still to come is closed by the thread that made it
  return std::move(s->c);
}

}  // namespace dlock::detail::my
