// One flash-sale worker process: lock, read the stock, pause, write stock-1 with the fencing
// token, unlock; until the stock is gone.
#include <unistd.h>

#include <dlock/mutex.hpp>
#include <iostream>
#include <optional>
#include <random>
#include <thread>

#include "cli/common.hpp"
#include "cli/demo.hpp"

namespace dlock::cli {
namespace {

using steady = std::chrono::steady_clock;

steady::time_point steady_deadline(std::int64_t wall_ms) {
  auto wall = std::chrono::system_clock::time_point{std::chrono::milliseconds{wall_ms}};
  return steady::now() + (wall - std::chrono::system_clock::now());
}

void wait_for_start() {
  char buf[64];
  while (::read(0, buf, sizeof buf) > 0) {
  }
}

}  // namespace

int run_flash_sale_worker(const worker_options& o) {
  shop store(o.shop);
  dlock::session session;
  std::optional<dlock::mutex> m;
  if (!o.no_lock) {
    session = open_session(resolve_url(o.url),
                           {.description = "flash-sale worker " + std::to_string(o.id)});
    m.emplace(session, flash_sale_lock);
  }
  std::cout << "ready" << std::endl;
  wait_for_start();

  auto deadline = steady_deadline(o.deadline_ms);
  std::minstd_rand rng(std::random_device{}());
  std::uniform_int_distribution<int> pause(o.pause_min_us, o.pause_max_us);
  long long acquisitions = 0;
  int status = exit_conflict;  // until the stock is seen empty
  while (steady::now() < deadline) {
    auto asked = steady::now();
    if (m) {
      std::error_code ec;
      if (!m->try_lock_until(deadline, {}, ec)) {
        if (ec == dlock::errc::timed_out || ec == dlock::errc::would_block) break;
        throw cli_error(exit_code_for(ec), "worker " + std::to_string(o.id) + ": " + ec.message());
      }
    }
    auto waited = std::chrono::duration_cast<std::chrono::microseconds>(steady::now() - asked);
    // The token of this grant, taken now: the write below carries it whatever happens next.
    std::uint64_t token = m ? m->current_hold().token().value : 0;
    ++acquisitions;
    long long qty = store.read_stock(token);
    if (qty <= 0) {
      if (m) m->unlock();
      status = exit_ok;
      break;
    }
    std::this_thread::sleep_for(std::chrono::microseconds{pause(rng)});
    store.sell(qty - 1, token, o.id, waited.count());
    if (m) m->unlock();
  }
  store.record_worker(o.id, acquisitions, status);
  if (m) m.reset();
  session.close();
  return status;
}

}  // namespace dlock::cli
