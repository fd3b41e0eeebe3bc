#include "backends/zookeeper/zk_fetch.hpp"

#include <condition_variable>
#include <memory>
#include <mutex>

namespace dlock::detail::zk {
namespace {

struct batch {
  std::mutex m;
  std::condition_variable_any cv;
  std::size_t pending{0};
  std::vector<node_read> out;
};

// Owned by the client between the request and its completion, so a caller that gave up
// waiting leaves nothing dangling.
struct request {
  std::shared_ptr<batch> b;
  std::size_t index;
};

void on_data(int rc, const char* value, int value_len, const struct Stat* stat, const void* data) {
  std::unique_ptr<request> req(static_cast<request*>(const_cast<void*>(data)));
  auto& b = *req->b;
  {
    std::lock_guard lk(b.m);
    auto& r = b.out[req->index];
    r.rc = rc;
    if (rc == ZOK) {
      if (stat) r.stat = *stat;
      if (value && value_len > 0) r.data.assign(value, static_cast<std::size_t>(value_len));
    }
    --b.pending;
  }
  b.cv.notify_all();
}

}  // namespace

std::vector<node_read> fetch_nodes(zhandle_t* zh, const std::vector<std::string>& paths,
                                   std::chrono::milliseconds limit, std::stop_token stop,
                                   fetch_error& err) {
  err = {ZOK, {}};
  auto b = std::make_shared<batch>();
  b->out.resize(paths.size());
  for (std::size_t i = 0; i < paths.size(); ++i) {
    auto* req = new request{b, i};
    {
      std::lock_guard lk(b->m);
      ++b->pending;
    }
    int rc = zoo_aget(zh, paths[i].c_str(), 0, &on_data, req);
    if (rc != ZOK) {
      delete req;
      std::lock_guard lk(b->m);
      --b->pending;
      b->out[i].rc = rc;
    }
  }
  std::unique_lock lk(b->m);
  if (!b->cv.wait_for(lk, stop, limit, [&] { return b->pending == 0; })) {
    err = {stop.stop_requested() ? ZCLOSING : ZOPERATIONTIMEOUT,
           paths.empty() ? std::string() : paths.front()};
    return {};
  }
  for (std::size_t i = 0; i < paths.size(); ++i) {
    if (b->out[i].rc != ZOK && b->out[i].rc != ZNONODE) {
      err = {b->out[i].rc, paths[i]};
      return {};
    }
  }
  return std::move(b->out);
}

}  // namespace dlock::detail::zk
