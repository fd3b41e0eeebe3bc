#pragma once
// One asynchronous request of a connection, shared by its caller and the client's completion
// thread, and the wait for it: bounded by a deadline and cut off by the session's end.

#include <zookeeper/zookeeper.h>

#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "backends/zookeeper/zk_connection.hpp"
#include "core/caller_deadline.hpp"

namespace dlock::detail::zk {

// One asynchronous request, shared by its caller and the client's completion thread: a
// caller that stopped waiting at its deadline leaves the completion the last reference.
struct pending_call {
  std::mutex m;
  std::condition_variable_any cv;
  bool done{false};
  int rc{ZOPERATIONTIMEOUT};
  std::vector<std::string> children;
  std::string value;
  struct Stat stat {};
  std::vector<zoo_op_result_t> results;  // a multi's, written by the client at its reply

  static void finish(const void* data, int rc, const String_vector* strings) {
    std::unique_ptr<std::shared_ptr<pending_call>> held(
        static_cast<std::shared_ptr<pending_call>*>(const_cast<void*>(data)));
    auto& p = **held;
    {
      std::lock_guard lk(p.m);
      p.done = true;
      p.rc = rc;
      if (rc == ZOK && strings) p.children.assign(strings->data, strings->data + strings->count);
    }
    p.cv.notify_all();
  }

  // A completion that carries a stat (setData, exists; getData's through a lambda): keeps
  // it, then finishes.
  static void finish_stat(int rc, const struct Stat* stat, const void* data) {
    if (rc == ZOK && stat) {
      auto& p = **static_cast<const std::shared_ptr<pending_call>*>(data);
      std::lock_guard lk(p.m);
      p.stat = *stat;
    }
    finish(data, rc, nullptr);
  }
};

// Issues `start(zh, completion data)` and waits for its completion until `deadline`.
template <class Start>
inline int call_until(connection& c, steady::time_point deadline, std::shared_ptr<pending_call>& p,
                      Start start) {
  deadline = within_caller_deadline(deadline);
  p = std::make_shared<pending_call>();
  {
    auto u = c.acquire();
    if (!u) return ZCLOSING;
    auto* held = new std::shared_ptr<pending_call>(p);
    int rc = start(u->zh(), static_cast<const void*>(held));
    if (rc != ZOK) {
      delete held;  // not queued: no completion will come
      return rc;
    }
  }
  std::unique_lock lk(p->m);
  if (p->cv.wait_until(lk, c.ended(), deadline, [&] { return p->done; })) {
    c.heard_back(true);
    return p->rc;
  }
  lk.unlock();
  if (c.ended().stop_requested()) return c.ended_rc();
  c.heard_back(false);
  return ZOPERATIONTIMEOUT;
}

}  // namespace dlock::detail::zk
