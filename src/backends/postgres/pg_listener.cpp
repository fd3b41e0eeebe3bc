#include "backends/postgres/pg_listener.hpp"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>

namespace dlock::detail::pg {

listener::listener(target t, std::chrono::milliseconds timeout, statements stmts)
    : target_(std::move(t)), timeout_(timeout), stmts_(std::move(stmts)) {}

void listener::wake_reader() {
  if (wake_fd_ < 0) return;
  std::uint64_t one = 1;
  (void)!::write(wake_fd_, &one, sizeof one);
}

result<void> listener::connect_locked(until_t until) {
  if (stopping_) return fail(errc::session_closed, target_.where + ": session closed");
  if (conn_ && conn_->usable()) return {};
  auto timeout = timeout_;
  if (until) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        *until - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      return fail(errc::backend_unavailable,
                  target_.where + ": no connection to listen on before the caller's deadline");
    }
    timeout = std::min(timeout, left);
  }
  auto c = conn::open(target_, timeout, closing_.get_token());
  if (!c) {
    if (closing_.stop_requested()) return fail(errc::session_closed, target_.where + ": closed");
    return fail(c.error());
  }
  conn_ = std::move(*c);
  {
    std::lock_guard ilk(interrupt_mu_);
    interrupter_ = conn_->interrupter();
  }
  conn_->set_unnamed(pooled_);
  // A new connection listens on nothing: every subscription taken before is void.
  by_id_.clear();
  id_by_channel_.clear();
  stale_channels_ = false;
  active_ = 0;
  ++epoch_;
  cv_.notify_all();
  if (wake_fd_ < 0) {
    wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (wake_fd_ < 0) return fail(errc::backend_error, target_.where + ": eventfd failed");
    reader_ = std::thread([this] { read_loop(); });
  }
  wake_reader();  // the reader polls the new socket
  return {};
}

// After every request on the connection: deliver what arrived meanwhile and, if the
// request broke the connection, wake everyone (waiters re-check; the reader drops the fd).
void listener::after_request_locked() {
  dispatch_locked();
  if (!conn_ || !conn_->usable()) {
    conn_.reset();
    ++epoch_;
    cv_.notify_all();
    wake_reader();
  }
}

void listener::dispatch_locked() {
  if (!conn_) return;
  bool any = false;
  for (const auto& ch : conn_->take_notifications()) {
    auto it = id_by_channel_.find(ch);
    if (it == id_by_channel_.end()) continue;
    auto st = by_id_.find(it->second);
    if (st == by_id_.end()) continue;
    ++st->second.notified;
    any = true;
  }
  if (any) cv_.notify_all();
}

result<listener::ticket> listener::subscribe(const std::string& id, until_t until) {
  std::lock_guard lk(mu_);
  if (auto r = connect_locked(until); !r) return fail(r.error());
  auto it = by_id_.find(id);
  if (it != by_id_.end()) {
    // Another waiter of this session listens already, or one did and its LISTEN stays: a
    // semaphore's waiter waits again on most of the entries it waited on, and LISTENing
    // afresh cost a round trip each (6.45 per release among 1 000 waiters).
    if (it->second.refs++ == 0) ++active_;
    return ticket{id, it->second.notified, epoch_};
  }
  if (pooled_) {  // no LISTEN: a ticket that only times out
    auto& st = by_id_[id];
    st.refs = 1;
    ++active_;
    return ticket{id, st.notified, epoch_};
  }
  bool reset = stale_channels_ && active_ == 0;
  auto r = conn_->run(stmts_.listen, {id, reset ? "true" : "false"}, until);
  if (!r) {
    after_request_locked();
    return fail(r.error());
  }
  if (reset) {
    by_id_.clear();
    id_by_channel_.clear();
    stale_channels_ = false;
  }
  auto channel = r->text(0, 0);
  auto& st = by_id_[id];
  st.channel = channel;
  st.refs = 1;
  ++active_;
  id_by_channel_[channel] = id;
  auto t = ticket{id, st.notified, epoch_};
  after_request_locked();
  return t;
}

result<std::optional<listener::liveness>> listener::alive(const std::string& id, until_t until) {
  std::lock_guard lk(mu_);
  if (auto r = connect_locked(until); !r) return fail(r.error());
  auto r = conn_->run(stmts_.alive, {id}, until);
  after_request_locked();
  if (!r) return fail(r.error());
  if (r->count() == 0) return std::optional<liveness>{};
  return std::optional{liveness{std::chrono::milliseconds{r->i64(0, 0)}, r->text(0, 1) == "t"}};
}

result<std::vector<std::optional<listener::liveness>>> listener::alive_all(
    const std::vector<std::string>& ids, until_t until) {
  // A text[] literal: every element quoted, so no id can be read as anything but itself.
  std::string array = "{";
  for (const auto& id : ids) {
    if (array.size() > 1) array += ',';
    array += '"';
    for (char c : id) {
      if (c == '"' || c == '\\') array += '\\';
      array += c;
    }
    array += '"';
  }
  array += '}';
  std::lock_guard lk(mu_);
  if (auto r = connect_locked(until); !r) return fail(r.error());
  auto r = conn_->run(stmts_.alive_any, {array}, until);
  after_request_locked();
  if (!r) return fail(r.error());
  std::vector<std::optional<liveness>> out(ids.size());
  for (int row = 0; row < r->count(); ++row) {
    auto id = r->text(row, 0);
    for (std::size_t i = 0; i < ids.size(); ++i) {
      if (ids[i] == id) {
        out[i] = liveness{std::chrono::milliseconds{r->i64(row, 1)}, r->text(row, 2) == "t"};
      }
    }
  }
  return out;
}

bool listener::wait(const ticket& t, std::chrono::steady_clock::time_point until,
                    std::stop_token stop) {
  return wait_any(std::span<const ticket>(&t, 1), until, std::move(stop));
}

bool listener::wait_any(std::span<const ticket> ts, std::chrono::steady_clock::time_point until,
                        std::stop_token stop) {
  std::unique_lock lk(mu_);
  return cv_.wait_until(lk, stop, until, [&] {
    if (stopping_) return true;
    for (const auto& t : ts) {
      if (epoch_ != t.epoch) return true;
      auto it = by_id_.find(t.id);
      if (it == by_id_.end() || it->second.notified != t.seen) return true;
    }
    return false;
  });
}

void listener::unsubscribe(const ticket& t) {
  std::lock_guard lk(mu_);
  if (t.epoch != epoch_) return;  // the connection it belonged to is gone
  auto it = by_id_.find(t.id);
  if (it == by_id_.end() || it->second.refs == 0 || --it->second.refs > 0) return;
  // Left LISTENing, and kept here for the next subscribe of the same entry: dropped by the
  // next subscribe that finds no wait in progress, which costs no extra round trip. Where
  // waits never pause, only the most recent are kept here (the server keeps listening to the
  // others until that subscribe; a later subscribe of one LISTENs again, which changes nothing
  // there).
  --active_;
  stale_channels_ = true;
  if (by_id_.size() - active_ > max_idle) {
    for (auto i = by_id_.begin(); i != by_id_.end();) {
      if (i->second.refs > 0) {
        ++i;
        continue;
      }
      id_by_channel_.erase(i->second.channel);
      i = by_id_.erase(i);
    }
  }
}

void listener::read_loop() {
  for (;;) {
    int fd = -1;
    {
      std::lock_guard lk(mu_);
      if (stopping_) return;
      if (conn_ && conn_->usable()) fd = conn_->socket();
    }
    pollfd p[2] = {{wake_fd_, POLLIN, 0}, {fd, POLLIN, 0}};
    if (::poll(p, 2, -1) < 0 && errno != EINTR) return;
    if (p[0].revents & POLLIN) {
      std::uint64_t v;
      (void)!::read(wake_fd_, &v, sizeof v);
    }
    std::lock_guard lk(mu_);
    if (stopping_) return;
    if (fd < 0 || !(p[1].revents & (POLLIN | POLLHUP | POLLERR))) continue;
    if (!conn_ || conn_->socket() != fd) continue;  // replaced meanwhile
    if (!conn_->consume()) {
      conn_.reset();
      ++epoch_;
      cv_.notify_all();
      continue;
    }
    dispatch_locked();
  }
}

void listener::close() noexcept {
  closing_.request_stop();
  {
    std::lock_guard ilk(interrupt_mu_);
    if (interrupter_) interrupter_->interrupt();
  }
  {
    std::lock_guard lk(mu_);
    if (stopping_) return;
    stopping_ = true;
    cv_.notify_all();
    wake_reader();
  }
  if (reader_.joinable()) reader_.join();
  std::lock_guard lk(mu_);
  conn_.reset();
  if (wake_fd_ >= 0) ::close(wake_fd_);
  wake_fd_ = -1;
}

}  // namespace dlock::detail::pg
