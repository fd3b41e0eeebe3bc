// The session's Watch stream (etcd_watch.hpp): one reader thread, watches by id.
#include "backends/etcd/etcd_watch.hpp"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <condition_variable>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "backends/etcd/etcd_channel.hpp"
#include "etcd_rpc.grpc.pb.h"

namespace dlock::detail::etcd {
namespace {

namespace pb = etcdserverpb;
using stream_t = grpc::ClientReaderWriter<pb::WatchRequest, pb::WatchResponse>;

// One wait: its watches' ids and how it ended. Guarded by the hub's mutex.
struct waiter {
  enum class outcome { waiting, event, spurious } how{outcome::waiting};
  std::vector<std::int64_t> ids;
  std::vector<std::int64_t> in_place;  // watches created at the present: their keys to check
  std::condition_variable_any cv;
};

struct watch {
  std::string key, end;
  std::int64_t from{0};  // replayed from here on every stream: it ends at its first event
  bool deletes_only{true};
  std::int64_t create_revision{0};  // of the watched key, when known
  bool at_present{false};           // created at the present: check the key once the server has it
  waiter* w{nullptr};
  std::uint64_t sent_on{0};  // the stream whose create request carried it (0: none yet)
};

// A stream and its context; `finished` (under the write mutex) once Finish was called, after
// which nothing may be written to it.
struct link {
  grpc::ClientContext ctx;
  std::unique_ptr<stream_t> s;
  std::string token;
  std::uint64_t number{0};
  bool finished{false};
};

pb::WatchRequest create_request(std::int64_t id, const watch& w) {
  pb::WatchRequest r;
  auto* c = r.mutable_create_request();
  c->set_key(w.key);
  c->set_range_end(w.end);
  c->set_start_revision(w.at_present ? 0 : w.from);
  c->set_watch_id(id);
  if (w.deletes_only) c->add_filters(pb::WatchCreateRequest::NOPUT);
  return r;
}

pb::WatchRequest cancel_request(std::int64_t id) {
  pb::WatchRequest r;
  r.mutable_cancel_request()->set_watch_id(id);
  return r;
}

}  // namespace

struct watch_hub::state {
  std::unique_ptr<pb::Watch::Stub> stub;
  watch_hooks hooks;
  std::mutex mu;
  std::condition_variable_any idle;  // the reader, while no watch is wanted
  std::map<std::int64_t, watch> watches;
  std::set<waiter*> waiters;
  std::int64_t next_id{1};  // 0 would ask the server to choose
  bool closed{false};
  std::shared_ptr<link> open;  // the stream, while it is up
  std::uint64_t opened{0};
  std::mutex write_mu;  // one Write at a time on a stream
  std::thread reader;

  void send(const std::shared_ptr<link>& l, const std::vector<pb::WatchRequest>& reqs) {
    if (!l) return;
    std::lock_guard g(write_mu);
    for (const auto& r : reqs) {
      // A failed write means a broken stream: the reader sees it and opens another.
      if (l->finished || !l->s->Write(r)) return;
    }
  }

  void end_wait(waiter& w, waiter::outcome how) {
    if (w.how == waiter::outcome::waiting) w.how = how;
    w.cv.notify_all();
  }

  // One response: wake the wait it is for; a compacted watch is created again.
  void handle(const std::shared_ptr<link>& l, const pb::WatchResponse& resp) {
    std::vector<pb::WatchRequest> out;
    bool refused = false;
    {
      std::lock_guard g(mu);
      auto it = watches.find(resp.watch_id());
      if (it == watches.end()) {
        // No wait wants it any more (its cancel crossed its create): cancel it again.
        if (!resp.canceled() && resp.watch_id() > 0) out.push_back(cancel_request(resp.watch_id()));
      } else if (resp.canceled()) {
        auto& w = it->second;
        if (resp.compact_revision() > 0 && w.deletes_only) {
          // The key's history before the compaction is gone: watch from there (a deletion
          // after it is still replayed).
          auto again = w;
          again.from = resp.compact_revision();
          again.at_present = false;
          again.sent_on = l->number;
          auto& ids = again.w->ids;
          std::replace(ids.begin(), ids.end(), it->first, next_id);
          watches.erase(it);
          out.push_back(create_request(next_id, again));
          watches.emplace(next_id++, std::move(again));
        } else {
          // A change watch's history may hide a change: say so. Otherwise refused (a stale
          // token, a permission): the engine lists again, on a stream opened anew.
          end_wait(*w.w, w.deletes_only ? waiter::outcome::spurious : waiter::outcome::event);
          refused = resp.compact_revision() == 0;
        }
      } else {
        auto& w = it->second;
        if (resp.created() && w.at_present) {
          w.w->in_place.push_back(it->first);
          w.w->cv.notify_all();
        }
        for (const auto& ev : resp.events()) {
          if (!w.deletes_only || ev.type() == pb::Event::DELETE) {
            end_wait(*w.w, waiter::outcome::event);
          }
        }
      }
    }
    send(l, out);
    if (refused) {
      hooks.refused(grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "invalid auth token"),
                    l->token);
      l->ctx.TryCancel();
    }
  }

  // The reader thread: opens the stream while watches are wanted, creates them on it, and
  // reads until it breaks; then again, after a pause that grows while no stream answers.
  void run() {
    int failures = 0;
    std::unique_lock lk(mu);
    while (!closed) {
      if (watches.empty()) {
        idle.wait(lk, [&] { return closed || !watches.empty(); });
        continue;
      }
      lk.unlock();
      auto l = std::make_shared<link>();
      auto token = hooks.begin(l->ctx);
      if (!token) {
        lk.lock();
        break;  // the client is closed
      }
      l->token = *token;
      // Wait for a connection rather than fail at once while the channel reconnects (as Go's
      // client does): the stream opens as soon as a member answers.
      l->ctx.set_wait_for_ready(true);
      l->s = stub->Watch(&l->ctx);
      std::vector<pb::WatchRequest> creates;
      lk.lock();
      l->number = ++opened;
      open = l;
      if (closed) l->ctx.TryCancel();
      for (auto& [id, w] : watches) {
        w.sent_on = l->number;
        w.at_present = false;  // a new stream replays the history a broken one may have missed
        creates.push_back(create_request(id, w));
      }
      lk.unlock();
      send(l, creates);
      bool answered = false;
      pb::WatchResponse resp;
      while (l->s->Read(&resp)) {
        answered = true;
        handle(l, resp);
      }
      lk.lock();
      open.reset();
      lk.unlock();
      {
        std::lock_guard g(write_mu);
        l->finished = true;
      }
      auto st = l->s->Finish();
      hooks.end(l->ctx);
      if (stale_token(st)) hooks.refused(st, l->token);
      lk.lock();
      failures = answered ? 0 : failures + 1;
      if (!closed && failures > 0) {
        auto pause = std::chrono::milliseconds{25 << std::min(failures, 5)};
        idle.wait_for(lk, pause, [&] { return closed; });
      }
    }
    for (auto* w : waiters) end_wait(*w, waiter::outcome::spurious);
  }

  // The keys of `me`'s watches the server has just put in place at the present: a deletion
  // before that was not replayed, so read each key once (without the hub's lock).
  void check_in_place(std::unique_lock<std::mutex>& lk, waiter& me, const key_check& still_there) {
    std::vector<std::pair<std::string, std::int64_t>> keys;
    for (auto id : me.in_place) {
      if (auto it = watches.find(id); it != watches.end())
        keys.emplace_back(it->second.key, it->second.create_revision);
    }
    me.in_place.clear();
    lk.unlock();
    auto how = waiter::outcome::waiting;
    for (const auto& [key, rev] : keys) {
      auto there = still_there(key, rev);
      if (!there)
        how = waiter::outcome::spurious;  // unknown: the engine lists again
      else if (!*there)
        how = waiter::outcome::event;
      if (how != waiter::outcome::waiting) break;
    }
    lk.lock();
    if (how != waiter::outcome::waiting) end_wait(me, how);
  }

  result<bool> await(std::vector<watch> ws, steady::time_point deadline, std::stop_token stop,
                     const key_check& still_there = {}) {
    waiter me;
    std::shared_ptr<link> l;
    std::vector<pb::WatchRequest> creates;
    std::unique_lock lk(mu);
    if (closed) return false;
    if (!reader.joinable()) reader = std::thread([this] { run(); });
    l = open;
    for (auto& w : ws) {
      w.w = &me;
      w.at_present = l && still_there && w.deletes_only && w.create_revision > 0;
      if (l) {
        w.sent_on = l->number;
        creates.push_back(create_request(next_id, w));
      }
      me.ids.push_back(next_id);
      watches.emplace(next_id++, std::move(w));
    }
    waiters.insert(&me);
    idle.notify_all();
    lk.unlock();
    send(l, creates);
    lk.lock();
    auto done = [&] { return me.how != waiter::outcome::waiting || closed; };
    auto woken = [&] { return done() || !me.in_place.empty(); };
    while (!done() && !stop.stop_requested() && steady::now() < deadline) {
      if (!me.in_place.empty()) {
        check_in_place(lk, me, still_there);
        continue;
      }
      // Slices: a far deadline (lock() without one) overflows the clock's conversions.
      me.cv.wait_until(lk, stop, std::min(deadline, steady::now() + std::chrono::hours{1}), woken);
    }
    std::vector<pb::WatchRequest> cancels;
    for (auto id : me.ids) {
      auto it = watches.find(id);
      if (it == watches.end()) continue;
      if (open && it->second.sent_on == open->number) cancels.push_back(cancel_request(id));
      watches.erase(it);
    }
    waiters.erase(&me);
    l = open;
    const bool event = me.how == waiter::outcome::event;
    lk.unlock();
    send(l, cancels);
    return event;
  }
};

watch_hub::watch_hub(std::shared_ptr<grpc::Channel> channel, watch_hooks hooks)
    : s_(std::make_unique<state>()) {
  s_->stub = pb::Watch::NewStub(channel);
  s_->hooks = std::move(hooks);
}

watch_hub::~watch_hub() {
  shut_down();
  if (s_->reader.joinable()) s_->reader.join();
}

result<bool> watch_hub::await_delete(std::span<const watched_key> keys, steady::time_point deadline,
                                     std::stop_token stop, const key_check& still_there) {
  std::vector<watch> ws;
  for (const auto& k : keys) {
    watch w;
    w.key = k.key;
    w.from = k.from_revision;
    w.create_revision = k.create_revision;
    ws.push_back(std::move(w));
  }
  return s_->await(std::move(ws), deadline, std::move(stop), still_there);
}

result<bool> watch_hub::await_change(const std::string& begin, const std::string& end,
                                     std::int64_t from_revision, steady::time_point deadline,
                                     std::stop_token stop) {
  watch w;
  w.key = begin;
  w.end = end;
  w.from = from_revision;
  w.deletes_only = false;
  std::vector<watch> ws{std::move(w)};
  return s_->await(std::move(ws), deadline, std::move(stop));
}

void watch_hub::shut_down() noexcept {
  std::lock_guard g(s_->mu);
  s_->closed = true;
  if (s_->open) s_->open->ctx.TryCancel();
  for (auto* w : s_->waiters) s_->end_wait(*w, waiter::outcome::spurious);
  s_->idle.notify_all();
}

}  // namespace dlock::detail::etcd
