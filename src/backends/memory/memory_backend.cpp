#include "backends/memory/memory_backend.hpp"

#include <algorithm>
#include <span>

#include "backends/memory/memory_store.hpp"

namespace dlock::detail {
namespace {

class memory_session final : public backend_session {
 public:
  memory_session(std::shared_ptr<memory_store> store, session_info info)
      : store_(std::move(store)), info_(std::move(info)) {
    std::lock_guard lk(store_->mu);
    store_->set_lease(info_.id, store_->clock() + info_.ttl);
  }

  capabilities caps() const noexcept override {
    capabilities c{reach::process, /*push_wakeups=*/true, /*durable_tokens=*/false};
    c.permits = true;
    c.values = true;
    c.no_ending_others_because = "memory:// locks live in one process: end the holder there";
    return c;
  }

  // Nothing to check live: what memory:// is follows from where it lives.
  result<std::vector<check_finding>> diagnose() override {
    return std::vector<check_finding>{
        {.check = "reach",
         .guarantee = "exclusion",
         .reason = "in this process only: its threads exclude each other; other processes do "
                   "not see these locks",
         .value = "process"}};
  }

  result<queue_view> enqueue(std::string_view lock, entry_kind kind, std::string_view id) override {
    std::lock_guard lk(store_->mu);
    auto sent = steady::now();
    if (auto r = check_live(); !r) return fail(r.error());
    auto& q = store_->queues[std::string(lock)];
    if (!store_->live.contains(std::string(id))) {
      auto token = ++store_->tokens[std::string(lock)];
      store_->live.insert(std::string(id));
      q.push_back({entry{.id = std::string(id),
                         .kind = kind,
                         .token = token,
                         .owner = info_.owner,
                         .since = std::chrono::system_clock::now(),
                         .lease_left = {}},
                   info_.id});
      store_->notify_observers();
    }
    return snapshot(q, sent);
  }

  result<queue_view> list(std::string_view lock) override {
    std::lock_guard lk(store_->mu);
    auto sent = steady::now();
    if (closed_) return fail(errc::session_closed, "memory session closed");
    store_->purge();
    auto it = store_->queues.find(lock);
    if (it == store_->queues.end()) return queue_view{{}, sent};
    return snapshot(it->second, sent);
  }

  result<void> remove(std::string_view lock, std::string_view id) override {
    std::lock_guard lk(store_->mu);
    store_->purge();  // an entry whose lease ended is gone, not ours to remove
    auto gone = [&] {
      return fail(errc::lock_lost,
                  "memory entry " + std::string(id) + " of '" + std::string(lock) + "' is gone");
    };
    auto it = store_->queues.find(lock);
    if (it == store_->queues.end()) return gone();
    auto n = store_->erase_entries(
        it->second, [&](const memory_entry& m) { return m.e.id == id && m.session == info_.id; });
    if (it->second.empty()) store_->queues.erase(it);
    if (n == 0) return gone();
    store_->notify_observers();
    return {};
  }

  result<std::uint64_t> set_value(std::string_view lock, std::string_view id,
                                  std::string_view value) override {
    std::lock_guard lk(store_->mu);
    if (closed_) return fail(errc::session_closed, "memory session closed");
    store_->purge();
    auto it = store_->queues.find(lock);
    if (it != store_->queues.end()) {
      for (auto& m : it->second) {
        if (m.e.id != id || m.session != info_.id) continue;
        m.e.value = value;
        ++m.e.version;
        store_->notify_observers();
        return m.e.version;
      }
    }
    return fail(errc::lock_lost,
                "memory entry " + std::string(id) + " of '" + std::string(lock) + "' is gone");
  }

  result<void> wait_change(std::string_view lock, const queue_view& seen,
                           steady::time_point deadline, std::stop_token stop) override {
    std::unique_lock lk(store_->mu);
    auto differs = [&] {
      store_->purge();
      auto it = store_->queues.find(lock);
      if (it == store_->queues.end()) return !seen.entries.empty();
      if (it->second.size() != seen.entries.size()) return true;
      for (std::size_t i = 0; i < seen.entries.size(); ++i) {
        const auto& e = it->second[i].e;
        if (e.id != seen.entries[i].id || e.version != seen.entries[i].version) return true;
      }
      return false;
    };
    // 50 ms steps, as wait_any's, so an injected clock's jumps end leases.
    ++store_->observers;
    while (!stop.stop_requested() && steady::now() < deadline) {
      auto until = std::min(deadline, steady::now() + std::chrono::milliseconds{50});
      if (store_->queue_changed.wait_until(lk, stop, until, differs)) break;
    }
    --store_->observers;
    return {};
  }

  result<void> wait(std::string_view lock, const entry& awaited, steady::time_point deadline,
                    std::stop_token stop) override {
    return wait_any(lock, std::span<const entry>(&awaited, 1), deadline, std::move(stop));
  }

  result<void> wait_any(std::string_view lock, std::span<const entry> awaited,
                        steady::time_point deadline, std::stop_token stop) override {
    std::unique_lock lk(store_->mu);
    (void)lock;
    auto gone = [&] {
      store_->purge();
      return std::any_of(awaited.begin(), awaited.end(),
                         [&](const entry& e) { return !store_->live.contains(e.id); });
    };
    // Registered under each awaited id before the first look, under the store's mutex: an
    // entry that leaves after the look wakes us. The 50 ms steps let an injected clock's
    // jumps end leases.
    memory_waiter me;
    // Unregistered on every way out (an emplace that throws included), under the mutex; by
    // value, as a rehash invalidates iterators kept from the emplace.
    struct registration {
      memory_store& store;
      memory_waiter* waiter;
      std::span<const entry> ids;
      ~registration() {
        for (const auto& e : ids) {
          auto [first, last] = store.waiting.equal_range(e.id);
          for (auto it = first; it != last; ++it) {
            if (it->second == waiter) {
              store.waiting.erase(it);
              break;
            }
          }
        }
      }
    } registered{*store_, &me, awaited};
    for (const auto& e : awaited) store_->waiting.emplace(e.id, &me);
    while (!stop.stop_requested() && steady::now() < deadline) {
      auto until = std::min(deadline, steady::now() + std::chrono::milliseconds{50});
      if (me.cv.wait_until(lk, stop, until, gone)) break;
    }
    return {};
  }

  result<steady::time_point> keep_alive() override {
    std::lock_guard lk(store_->mu);
    auto sent = steady::now();
    if (auto r = check_live(); !r) return fail(r.error());
    store_->set_lease(info_.id, store_->clock() + info_.ttl);
    return sent;
  }

  void close() noexcept override {
    std::lock_guard lk(store_->mu);
    if (closed_) return;
    closed_ = true;
    store_->leases.erase(info_.id);
    for (auto it = store_->queues.begin(); it != store_->queues.end();) {
      store_->erase_entries(it->second,
                            [&](const memory_entry& m) { return m.session == info_.id; });
      it = it->second.empty() ? store_->queues.erase(it) : std::next(it);
    }
    store_->notify_observers();
  }

  result<std::vector<std::string>> lock_names(std::string_view prefix) override {
    std::lock_guard lk(store_->mu);
    store_->purge();
    std::vector<std::string> out;
    for (auto& [name, q] : store_->queues) {
      if (name.starts_with(prefix)) out.push_back(name);
    }
    return out;
  }

 private:
  result<void> check_live() {
    if (closed_) return fail(errc::session_closed, "memory session closed");
    store_->purge();
    if (!store_->alive(info_.id)) {
      return fail(errc::session_expired, "memory session " + info_.id + " lease ended");
    }
    return {};
  }

  static queue_view snapshot(const std::vector<memory_entry>& q, steady::time_point sent) {
    queue_view v{{}, sent};
    v.entries.reserve(q.size());
    for (auto& m : q) v.entries.push_back(m.e);
    return v;
  }

  std::shared_ptr<memory_store> store_;
  session_info info_;
  bool closed_{false};
};

}  // namespace

result<std::unique_ptr<backend_session>> open_memory(const url& u, const session_info& info) {
  if (u.hosts.size() > 1 || !u.user.empty() || (!u.path.empty() && u.path != "/")) {
    return fail(errc::invalid_argument, "URL '" + u.redacted + "': want memory://NAME");
  }
  std::string name = u.hosts.empty() ? "default" : u.hosts.front().host;
  return std::make_unique<memory_session>(memory_store_named(name), info);
}

void set_memory_clock(const std::string& store, std::function<steady::time_point()> clock) {
  auto s = memory_store_named(store);
  std::lock_guard lk(s->mu);
  s->clock = std::move(clock);
}

void expire_memory_session(const std::string& store, const std::string& session_id) {
  auto s = memory_store_named(store);
  std::lock_guard lk(s->mu);
  s->set_lease(session_id, steady::time_point::min());
  s->purge();
}

std::uint64_t memory_waiters_woken(const std::string& store) {
  auto s = memory_store_named(store);
  std::lock_guard lk(s->mu);
  return s->waiters_woken;
}

std::size_t memory_raw_entries(const std::string& store, const std::string& lock) {
  auto s = memory_store_named(store);
  std::lock_guard lk(s->mu);
  auto it = s->queues.find(lock);
  return it == s->queues.end() ? 0 : it->second.size();
}

}  // namespace dlock::detail
