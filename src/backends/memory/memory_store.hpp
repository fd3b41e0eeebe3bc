#pragma once
// The shared state behind memory:// sessions of one NAME.

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/backend.hpp"

namespace dlock::detail {

struct memory_entry {
  entry e;
  std::string session;
};

// A thread in wait_any, registered under each entry id it awaits: an entry's leaving wakes
// only the threads awaiting it, not every waiter of the store (with 1000 waiters on one lock,
// every release woke all 1000, each to find its own entry still there).
struct memory_waiter {
  std::condition_variable_any cv;
};

struct memory_store {
  std::mutex mu;
  std::condition_variable_any queue_changed;  // an entry joined, left or got a value
  int observers{0};  // threads in wait_change: without any, queue_changed is not notified
  void notify_observers() {
    if (observers > 0) queue_changed.notify_all();
  }
  std::function<steady::time_point()> clock = [] { return steady::now(); };
  std::map<std::string, std::vector<memory_entry>, std::less<>> queues;
  std::map<std::string, std::uint64_t, std::less<>> tokens;  // kept forever: tokens never repeat
  std::map<std::string, steady::time_point, std::less<>> leases;  // session id -> lease end
  steady::time_point next_expiry = steady::time_point::max();     // no lease ends before this
  std::unordered_set<std::string> live;  // ids of every stored entry: O(1) "is it gone?"
  std::unordered_multimap<std::string, memory_waiter*> waiting;  // awaited id -> its waiters
  std::uint64_t waiters_woken{0};  // waiters notified by entries leaving (memory_waiters_woken)

  // Wakes the threads awaiting entry `id`, which left. Caller holds mu.
  void wake(const std::string& id) {
    auto [first, last] = waiting.equal_range(id);
    for (auto it = first; it != last; ++it) {
      it->second->cv.notify_one();
      ++waiters_woken;
    }
  }

  // Drops sessions whose lease ended and their entries. Caller holds mu. O(1) until some
  // lease may have ended.
  void purge();
  bool alive(const std::string& session) const;
  void set_lease(const std::string& session, steady::time_point end);
  // Removes the entries of `q` matching `pred`, keeping `live` in step and waking their
  // waiters; returns how many.
  template <class Pred>
  std::size_t erase_entries(std::vector<memory_entry>& q, Pred pred) {
    return std::erase_if(q, [&](const memory_entry& m) {
      if (!pred(m)) return false;
      live.erase(m.e.id);
      wake(m.e.id);
      return true;
    });
  }
};

std::shared_ptr<memory_store> memory_store_named(const std::string& name);

}  // namespace dlock::detail
