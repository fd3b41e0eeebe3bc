// The connection's end (zk_connection.hpp: close): the watches it armed dropped so that the C
// client frees their events, the handle closed, and the event thread joined.
#include <algorithm>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "backends/zookeeper/zk_connection.hpp"
#include "backends/zookeeper/zk_pending_call.hpp"

namespace dlock::detail::zk {
void connection::drop_watches(zhandle_t* zh) noexcept {
  std::vector<std::string> paths, parents;
  std::chrono::milliseconds bound{};
  {
    std::lock_guard lk(mu_);
    paths.assign(armed_.begin(), armed_.end());
    parents.assign(armed_children_.begin(), armed_children_.end());
    armed_.clear();
    armed_children_.clear();
    // Without a connection no event can arrive; with one, a few round trips at most. A server
    // that left a request unanswered is not waited for: a close at a paused server's mercy
    // held a tester's `dlock run -w 1s` 2 s past its message.
    if (!is_connected(state_) || silent_.load(std::memory_order_relaxed)) return;
    bound = std::clamp(negotiated_ / 3, std::chrono::milliseconds{100},
                       std::chrono::milliseconds{2000});
  }
  if (paths.empty() && parents.empty()) return;
  // The header types the completion as a pointer to one; the client calls what it is given.
  void_completion_t ignore = [](int, const void*) {};
  auto remove = [&](const std::vector<std::string>& from, ZooWatcherType type) {
    for (const auto& path : from) {
      // remove_all: a removal of one watcher only checks the server's side (CHECK_WATCHES).
      zoo_aremove_all_watches(zh, path.c_str(), type, 0,
                              reinterpret_cast<void_completion_t*>(ignore), nullptr);
    }
  };
  remove(paths, ZWATCHTYPE_DATA);
  remove(parents, ZWATCHTYPE_CHILD);
  // Replies and events arrive in order and completions run in order: once this one has run,
  // every event sent before the removals took effect has been delivered.
  auto barrier = std::make_shared<pending_call>();
  auto* held = new std::shared_ptr<pending_call>(barrier);
  int rc = zoo_aexists(
      zh, "/", 0,
      [](int rc, const struct Stat*, const void* d) { pending_call::finish(d, rc, nullptr); },
      held);
  if (rc != ZOK) {
    delete held;
    return;
  }
  std::unique_lock lk(barrier->m);
  barrier->cv.wait_for(lk, bound, [&] { return barrier->done; });
}

void connection::close() noexcept {
  {
    std::lock_guard lk(mu_);
    ended_ = true;
    closing_ = true;
  }
  ended_src_.request_stop();
  cv_.notify_all();
  zhandle_t* zh = nullptr;
  {
    std::unique_lock hk(handle_mu_);
    if (!closed_) {
      closed_ = true;
      zh = zh_;
      zh_ = nullptr;
    }
  }
  if (zh != nullptr) {
    drop_watches(zh);
    zookeeper_close(zh);
  }
  // One close joins the event thread, without join_mu_ held: that thread may itself be in
  // close() (a session's expiry handler ends the connection), and it must get through it to
  // end. Holding the mutex across the join deadlocked a worker at exit (CI-41: the closer
  // joined, the event thread waited for the mutex). Other closers wait for the join, so none
  // returns (and frees this object) while the event thread still runs.
  std::unique_lock jk(join_mu_);
  if (std::this_thread::get_id() == event_thread_id_) {
    if (event_thread_.joinable()) {
      event_thread_.request_stop();
      event_thread_.detach();
    }
    return;
  }
  if (event_thread_.joinable()) {
    auto t = std::move(event_thread_);
    joining_ = true;
    jk.unlock();
    t.request_stop();
    t.join();
    jk.lock();
    joining_ = false;
    joined_.notify_all();
    return;
  }
  joined_.wait(jk, [&] { return !joining_; });
}

}  // namespace dlock::detail::zk
