#include "backends/redis/redis_conn.hpp"

#include <hiredis/hiredis.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "backends/redis/redis_dial.hpp"
#include "core/open_budget.hpp"

namespace dlock::detail::redis {
namespace {

timeval to_timeval(std::chrono::milliseconds ms) {
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(ms.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>((ms.count() % 1000) * 1000);
  return tv;
}

bool starts_with_any(std::string_view s, std::initializer_list<std::string_view> prefixes) {
  for (auto p : prefixes) {
    if (s.starts_with(p)) return true;
  }
  return false;
}

}  // namespace

void reply_free::operator()(redisReply* r) const noexcept {
  if (r) freeReplyObject(r);
}

std::string_view reply_text(const redisReply* r) noexcept {
  if (!r) return {};
  if (r->type == REDIS_REPLY_STATUS || r->type == REDIS_REPLY_STRING ||
      r->type == REDIS_REPLY_ERROR) {
    return {r->str, r->len};
  }
  return {};
}

failure error_reply_failure(const target& t, std::string_view message) {
  errc code = errc::backend_error;
  if (starts_with_any(message, {"WRONGPASS", "NOAUTH", "NOPERM", "ERR invalid password", "ERR AUTH",
                                "ERR Client sent AUTH", "ERR invalid username"})) {
    code = errc::permission_denied;
  } else if (starts_with_any(message, {"LOADING", "BUSY", "TRYAGAIN", "MASTERDOWN", "CLUSTERDOWN",
                                       "READONLY"})) {
    // The server is starting, running a long script or failing over: worth retrying.
    code = errc::backend_unavailable;
  }
  return {make_error_code(code), t.where + ": " + std::string(message)};
}

result<std::unique_ptr<connection>> connection::open(const target& t,
                                                     std::optional<std::chrono::milliseconds> cap,
                                                     std::stop_token stop) {
  std::unique_ptr<connection> c(new connection(t));
  // Within session::open, connecting and logging in get only what is left of its budget.
  auto login_timeout = connect_bound(t.timeout);
  if (cap) login_timeout = std::max(std::min(login_timeout, *cap), std::chrono::milliseconds{1});
  c->timeout_ = login_timeout;
  auto fd = dial(t, login_timeout, stop, c->timed_out_);
  if (!fd) return fail(fd.error());
  c->ctx_ = redisConnectFd(*fd);  // owns the socket from here, even when it fails
  if (!c->ctx_) {
    ::close(*fd);
    return fail(errc::backend_unavailable, t.where + ": out of memory");
  }
  if (c->ctx_->err) return fail(c->transport_failure());
  std::stop_callback on_stop(stop, [raw = c.get()] { raw->interrupt(); });
  if (auto r = c->set_timeout(login_timeout); !r) return fail(r.error());
  std::vector<std::vector<std::string>> login;
  if (t.has_password) {
    login.push_back(t.user.empty() ? std::vector<std::string>{"AUTH", t.password}
                                   : std::vector<std::string>{"AUTH", t.user, t.password});
  }
  if (t.db != 0) login.push_back({"SELECT", std::to_string(t.db)});
  // PING proves the peer speaks RESP before anyone relies on it.
  login.push_back({"PING"});
  for (auto& argv : login) {
    auto r = c->call(argv);
    if (stop.stop_requested()) return fail(errc::cancelled, t.where + ": cancelled");
    if (!r) return fail(r.error());
    if ((*r)->type == REDIS_REPLY_ERROR) {
      auto text = reply_text(r->get());
      // The URL's /db does not exist on this server: the URL is wrong, not the server.
      if (argv[0] == "SELECT")
        return fail(errc::invalid_argument,
                    t.where + ": database " + argv[1] +
                        " (the URL's /db) was refused: " + std::string(text));
      return fail(error_reply_failure(t, text));
    }
    if (argv[0] == "PING" && reply_text(r->get()) != "PONG") {
      return fail(errc::protocol_error,
                  t.where + ": unexpected reply to PING (is this a Redis server?)");
    }
  }
  if (login_timeout != t.timeout) {
    if (auto r = c->set_timeout(t.timeout); !r) return fail(r.error());
  }
  return c;
}

connection::~connection() {
  if (ctx_) redisFree(ctx_);
}

failure connection::transport_failure() {
  broken_ = true;
  int err = ctx_ ? ctx_->err : REDIS_ERR_OTHER;
  std::string text = ctx_ ? ctx_->errstr : "no context";
  timed_out_ = err == REDIS_ERR_IO && (errno == EAGAIN || errno == EWOULDBLOCK ||
                                       errno == ETIMEDOUT || errno == EINPROGRESS);
  if (timed_out_) {
    text = "no answer within " + std::to_string(timeout_.count()) + " ms (" + text + ")";
  }
  if (err == REDIS_ERR_PROTOCOL) {
    return {make_error_code(errc::protocol_error),
            target_.where + ": not a Redis server? (" + text + ")"};
  }
  if (err == REDIS_ERR_EOF) text = "server closed the connection";
  return {make_error_code(errc::backend_unavailable), target_.where + ": " + text};
}

result<void> connection::send(std::initializer_list<std::string_view> head,
                              std::span<const std::string> argv) {
  if (broken_) return fail(errc::backend_unavailable, target_.where + ": connection broken");
  // Reused per thread: every request of a lock cycle goes through here. hiredis formats
  // the RESP itself (a hand-written encoder saved a microsecond or two per request, not
  // worth owning protocol code that the official client already has).
  thread_local std::vector<const char*> ptrs;
  thread_local std::vector<std::size_t> lens;
  ptrs.clear();
  lens.clear();
  for (auto a : head) {
    ptrs.push_back(a.data());
    lens.push_back(a.size());
  }
  for (const auto& a : argv) {
    ptrs.push_back(a.data());
    lens.push_back(a.size());
  }
  // hiredis writes with write(2), which raises SIGPIPE on a socket that is shut down -- as
  // interrupt() does when a wait is cancelled while its request is still being sent -- and
  // that signal kills a host at the default disposition. So hiredis only formats the command
  // here and the bytes go out with send(MSG_NOSIGNAL); its output buffer stays empty, so
  // redisGetReply never writes either.
  char* cmd = nullptr;
  int len = redisFormatCommandArgv(&cmd, static_cast<int>(ptrs.size()), ptrs.data(), lens.data());
  if (len < 0 || !cmd) {
    broken_ = true;
    return fail(errc::backend_unavailable, target_.where + ": out of memory");
  }
  std::unique_ptr<char, void (*)(char*)> owned(cmd, redisFreeCommand);
  for (std::size_t done = 0; done < static_cast<std::size_t>(len);) {
    auto n = ::send(ctx_->fd, cmd + done, static_cast<std::size_t>(len) - done, MSG_NOSIGNAL);
    if (n > 0) {
      done += static_cast<std::size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    return fail(write_failure(n < 0 ? errno : EPIPE));
  }
  return {};
}

failure connection::write_failure(int err) {
  broken_ = true;
  // SO_SNDTIMEO (redisSetTimeout) ends a send that cannot progress with EAGAIN.
  timed_out_ = err == EAGAIN || err == EWOULDBLOCK;
  if (timed_out_) {
    return {make_error_code(errc::backend_unavailable), target_.where + ": no answer within " +
                                                            std::to_string(timeout_.count()) +
                                                            " ms (sending the request)"};
  }
  return {make_error_code(errc::backend_unavailable),
          target_.where + ": " + (err == EPIPE ? "connection closed" : std::strerror(err))};
}

result<reply_ptr> connection::receive(until_t until) {
  if (broken_) return fail(errc::backend_unavailable, target_.where + ": connection broken");
  void* raw = nullptr;
  errno = 0;
  if (!until) {
    if (redisGetReply(ctx_, &raw) != REDIS_OK || raw == nullptr) return fail(transport_failure());
    return reply_ptr(static_cast<redisReply*>(raw));
  }
  // redisGetReply's blocking reads, each bounded by the socket timeout, with a poll() for
  // what is left until `until` before each read (one more system call per reply).
  for (;;) {
    if (redisGetReplyFromReader(ctx_, &raw) != REDIS_OK) return fail(transport_failure());
    if (raw) return reply_ptr(static_cast<redisReply*>(raw));
    auto left =
        std::chrono::ceil<std::chrono::milliseconds>(*until - std::chrono::steady_clock::now());
    auto wait = std::clamp(left, std::chrono::milliseconds{0}, timeout_);
    pollfd p{ctx_->fd, POLLIN, 0};
    // Polled even with nothing left: a reply already in the socket's buffer (a master read
    // after another that kept the caller waiting) is an answer, not a timeout.
    int n = ::poll(&p, 1, static_cast<int>(wait.count()));
    const int err = errno;
    if (n < 0 && err == EINTR) continue;
    if (n <= 0) {
      broken_ = true;
      timed_out_ = n == 0;
      if (n < 0) return fail(errc::backend_unavailable, target_.where + ": " + std::strerror(err));
      return fail(errc::backend_unavailable,
                  target_.where + (left > timeout_ ? ": no answer within " +
                                                         std::to_string(timeout_.count()) + " ms"
                                                   : ": no answer before the caller's deadline"));
    }
    errno = 0;
    if (redisBufferRead(ctx_) != REDIS_OK) return fail(transport_failure());
  }
}

result<reply_ptr> connection::call(std::span<const std::string> argv, until_t until) {
  if (auto s = send(argv); !s) return fail(s.error());
  return receive(until);
}

result<void> connection::set_timeout(std::chrono::milliseconds t) {
  if (broken_) return fail(errc::backend_unavailable, target_.where + ": connection broken");
  if (redisSetTimeout(ctx_, to_timeval(t)) != REDIS_OK) return fail(transport_failure());
  timeout_ = t;
  return {};
}

void connection::interrupt() noexcept {
  broken_ = true;
  if (ctx_ && ctx_->fd >= 0) ::shutdown(ctx_->fd, SHUT_RDWR);
}

}  // namespace dlock::detail::redis
