#include <hiredis/hiredis.h>

#include <string>
#include <vector>

#include "backends/redis/redis_session.hpp"

namespace dlock::detail::redis {

// One scheme per prefix. redis:// and redlock:// keep the same keys, but a Redlock grant needs
// only a majority of masters: a redis:// holder on one of them does not stop it (a tester's
// two `dlock run`s both held one name). The first session under a prefix records its scheme
// in `P scheme` (SET NX GET: one round trip, and the reply is the record that won); a session
// of the other scheme is refused. An observer only reads it. The record is per server: a
// Redlock master that was down (or lost its data) when the Redlock sessions opened gets it back
// at their next renewal (keep_alive), and until then a redis:// client that reaches only that
// master is not refused.
result<void> session::claim_scheme() {
  const std::string mine = redlock() ? "redlock" : "redis";
  const auto at = cfg_.prefix + "scheme";
  request claim{nullptr, info_.observe_only
                             ? std::vector<std::string>{"GET", at}
                             : std::vector<std::string>{"SET", at, mine, "NX", "GET"}};
  auto replies = run_all(nodes_, std::vector<request>(nodes_.size(), claim));
  std::vector<node*> recorded;  // where this open wrote the record (the reply was nil)
  for (std::size_t i = 0; i < replies.size(); ++i) {
    if (replies[i] && (*replies[i])->type == REDIS_REPLY_NIL && !info_.observe_only) {
      recorded.push_back(nodes_[i]);
    }
  }
  for (std::size_t i = 0; i < replies.size(); ++i) {
    if (!replies[i] || (*replies[i])->type != REDIS_REPLY_STRING) continue;  // unset, or down
    const std::string held((*replies[i])->str, (*replies[i])->len);
    if (held == mine) continue;
    // A refused open leaves no record of its own behind: it would refuse the other scheme
    // on masters that scheme's clients use alone.
    (void)run_all(recorded, std::vector<request>(recorded.size(), request{nullptr, {"DEL", at}}));
    return fail(errc::invalid_argument,
                cfg_.servers[i].where + ": prefix '" + cfg_.prefix + "' holds " + held +
                    ":// locks, and " + mine +
                    ":// locks under it would not exclude them (a Redlock grant needs only a "
                    "majority of masters): use one scheme for every client of this prefix, or "
                    "another ?prefix= (once no " +
                    held + ":// client is left: DEL " + at + ")");
  }
  return {};
}

}  // namespace dlock::detail::redis
