#pragma once
// A loopback TCP proxy for fault tests: clients connect to port(), the proxy connects each of
// them to 127.0.0.1:upstream and relays bytes, unless told to misbehave:
//  - pass():        relay everything (the default).
//  - blackhole():   stop reading and writing (and accepting) -- bytes wait in the kernel's
//                   buffers, as on a partitioned link; pass() lets them flow again.
//  - delay(d):      hold every chunk d before forwarding it (both directions). A client's
//                   close does not lose what it sent: that still reaches the server, late,
//                   and then the close (as TCP delivers a closed connection's bytes), so a
//                   request its client gave up on is applied after the client moved on.
//  - reset():       RST every connection (SO_LINGER 0, then close), and every new one until
//                   the mode changes.
//  - drop_replies(): relay what clients send, discard what the server answers -- a half-open
//                   link: requests (renewals) still reach the server, the client hears nothing.
//  - cut_server_side(): end every open connection's server side (a FIN to the server, which
//                   then frees what the connection held) and leave its client side open and
//                   silent: what the client sends is dropped, nothing comes back -- a hop whose
//                   state for the connection ended on one side only. New connections pass.
//  - drop_next_reply(): the next chunk any client sends is forwarded; when the server's
//                   reply arrives, that client's connection is RST instead -- the server
//                   applied the request, the client cannot know (the ambiguous failure).
// One thread runs a poll(2) loop; the members may be called from any thread.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

namespace dlock::test {

class tcp_proxy {
 public:
  // Listens on a free 127.0.0.1 port. Throws std::runtime_error.
  explicit tcp_proxy(std::uint16_t upstream_port);
  ~tcp_proxy();
  tcp_proxy(const tcp_proxy&) = delete;
  tcp_proxy& operator=(const tcp_proxy&) = delete;

  std::uint16_t port() const noexcept { return port_; }
  std::uint16_t upstream_port() const noexcept { return upstream_; }

  void pass();
  void blackhole();
  void delay(std::chrono::milliseconds d);
  void reset();
  void drop_next_reply();
  void drop_replies();
  void cut_server_side();

  // Counters, for tests and reports.
  std::size_t accepted() const noexcept { return accepted_.load(); }
  std::size_t resets() const noexcept { return resets_.load(); }
  std::size_t dropped_replies() const noexcept { return dropped_.load(); }
  std::size_t open_connections() const noexcept { return open_.load(); }
  // The chunk whose reply the last drop_next_reply() dropped (or is about to): lets a test
  // check which request the ambiguous failure hit.
  std::string last_dropped_request() const;

 private:
  enum class mode { pass, blackhole, delay, reset, drop_replies, cut_server_side };
  struct loop;

  void set(mode m, std::chrono::milliseconds d, bool arm_drop);
  void wake();
  void run(std::stop_token stop);

  std::uint16_t upstream_{0};
  std::uint16_t port_{0};
  mutable std::mutex mu_;  // guards mode_, delay_, drop_armed_, armed_request_, generation_, seen_
  std::condition_variable cv_;
  std::uint64_t generation_{0};  // bumped by every mode change
  std::uint64_t seen_{0};        // the generation the loop runs with
  mode mode_{mode::pass};
  std::chrono::milliseconds delay_{0};
  bool drop_armed_{false};
  std::string armed_request_;
  std::atomic<std::size_t> accepted_{0}, resets_{0}, dropped_{0}, open_{0};
  int listen_fd_{-1};
  int wake_fd_{-1};
  std::unique_ptr<loop> loop_;
  std::jthread thread_;
};

}  // namespace dlock::test
