#pragma once
// One synchronous hiredis connection: connect with a timeout, log in (AUTH, SELECT), check
// that the peer speaks Redis (PING), send commands, map every client error onto dlock::errc.
// A connection is used by one thread at a time (the node's pool hands it out).

#include <atomic>
#include <chrono>
#include <initializer_list>
#include <memory>
#include <optional>
#include <span>
#include <stop_token>
#include <string>

#include "backends/redis/redis_config.hpp"
#include "core/result.hpp"

struct redisContext;
struct redisReply;

namespace dlock::detail::redis {

// A deadline for one request (nothing: the connection's socket timeout alone bounds it).
using until_t = std::optional<std::chrono::steady_clock::time_point>;

struct reply_free {
  void operator()(redisReply* r) const noexcept;
};
using reply_ptr = std::unique_ptr<redisReply, reply_free>;

class connection {
 public:
  // Connects, authenticates, selects the database and PINGs, within t.timeout each (within
  // `cap` each, if that is less). `stop` gives up at any point of it (cancelled): a session
  // that expires must not wait out a login on a dead link.
  static result<std::unique_ptr<connection>> open(
      const target& t, std::optional<std::chrono::milliseconds> cap = std::nullopt,
      std::stop_token stop = {});
  ~connection();
  connection(const connection&) = delete;
  connection& operator=(const connection&) = delete;

  // One round trip. An error reply is returned as a reply (the caller decides, e.g. NOSCRIPT);
  // a transport failure marks the connection broken.
  result<reply_ptr> call(std::span<const std::string> argv, until_t until = std::nullopt);
  // Writes one command without reading its reply (to overlap round trips across servers).
  result<void> send(std::span<const std::string> argv) { return send({}, argv); }
  // The same with `head` before `argv` ("EVALSHA", sha), without copying either.
  result<void> send(std::initializer_list<std::string_view> head,
                    std::span<const std::string> argv);
  // The next reply. With `until`, no later than then: a reply not complete by then is a
  // timeout that marks the connection broken (it is never used again, so the late reply
  // cannot be read as the answer to another request).
  result<reply_ptr> receive(until_t until = std::nullopt);

  result<void> set_timeout(std::chrono::milliseconds t);
  std::chrono::milliseconds timeout() const noexcept { return timeout_; }
  // Makes a blocked call() return at once, from another thread (the connection is then broken).
  void interrupt() noexcept;

  bool broken() const noexcept { return broken_.load(); }
  // True when the last failure was a timeout (the request may still be applied).
  bool timed_out() const noexcept { return timed_out_; }
  const target& where() const noexcept { return target_; }

 private:
  explicit connection(const target& t) : target_(t) {}
  failure transport_failure();
  failure write_failure(int err);

  target target_;
  redisContext* ctx_{nullptr};
  std::atomic<bool> broken_{false};
  bool timed_out_{false};
  std::chrono::milliseconds timeout_{};
};

// The dlock error for an error reply ("WRONGPASS ...", "LOADING ..."), naming the server.
failure error_reply_failure(const target& t, std::string_view message);

// The text of a status, string or error reply ("" for others).
std::string_view reply_text(const redisReply* r) noexcept;

}  // namespace dlock::detail::redis
