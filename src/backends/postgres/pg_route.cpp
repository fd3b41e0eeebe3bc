// How a connection reaches the server (pg_conn.hpp: probe_route): directly, or through a
// pooler.
#include <charconv>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <stop_token>
#include <string>
#include <thread>

#include "backends/common/own_end.hpp"
#include "backends/postgres/pg_conn.hpp"

namespace dlock::detail::pg {

result<route> probe_route(conn& c, const target& t, std::chrono::milliseconds timeout) {
  auto first = c.exec(
      "SELECT pg_backend_pid(), host(inet_client_addr()), inet_client_port(),"
      " (SELECT setting FROM pg_settings WHERE name = 'idle_session_timeout')");
  if (!first) return fail(first.error());
  if (first->count() != 1) return fail(errc::protocol_error, c.where() + ": no backend pid");
  route out;
  out.idle_session_timeout = first->null(0, 3) ? "" : first->text(0, 3);
  auto pid = first->text(0, 0);
  if (!first->null(0, 2)) {
    auto local = own_end(c.socket());
    unsigned port = 0;
    const auto text = first->text(0, 2);
    auto [end, err] = std::from_chars(text.data(), text.data() + text.size(), port);
    if (local && err == std::errc{} && end == text.data() + text.size() &&
        names_own_end(first->text(0, 1), port, *local)) {
      out.direct = true;  // the server's peer is this very socket
      return out;
    }
  }
  auto pt = t;
  for (auto& [k, v] : pt.params) {
    if (k == "application_name") v = "dlock-probe";
  }
  // Neither step may wait long for a server process: a pool full of probes, each holding one
  // and waiting for another, deadlocked until the request timeout, and every other client's
  // statements (renewals too) queued behind it (a tester's 8 opens through a pool of 2; a holder
  // lost its lock with no fault). Past the direct check above, a second server process that a
  // second connection cannot have at once, or a statement of this one that waits for the pin
  // to go, can only be a pool's doing.
  constexpr std::chrono::milliseconds grace{750};
  auto other = conn::open(pt, std::min(timeout, grace));
  if (!other) return fail(other.error());
  auto pinned = other->exec("BEGIN; SELECT pg_backend_pid()");
  if (!pinned) {
    if (other->usable()) return fail(pinned.error());  // an answer, not a wait cut off
    out.pooled = true;
    out.seen =
        "a second connection got no server process within " + std::to_string(grace.count()) + " ms";
    return out;
  }
  if (pinned->text(0, 0) == pid) {
    out.pooled = true;
    out.seen = "two of its connections were served by one server process, " + pid;
    return out;
  }
  // The pin goes after `grace` whether or not this connection's statement has run.
  std::jthread unpin([&other, grace](std::stop_token st) {
    std::mutex m;
    std::condition_variable_any cv;
    std::unique_lock lk(m);
    cv.wait_for(lk, st, grace, [] { return false; });
    if (!st.stop_requested()) other->close();
  });
  const auto asked = std::chrono::steady_clock::now();
  auto second = c.exec("SELECT pg_backend_pid()");
  const bool waited = std::chrono::steady_clock::now() - asked >= grace;
  unpin.request_stop();
  unpin.join();
  if (!second) return fail(second.error());
  if (second->text(0, 0) != pid) {
    out.pooled = true;
    out.seen = "its server process changed between two statements, from " + pid + " to " +
               second->text(0, 0);
  } else if (waited) {
    out.pooled = true;
    out.seen = "a statement waited for a server process while another connection held one";
  }
  return out;
}

}  // namespace dlock::detail::pg
