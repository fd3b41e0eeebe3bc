#pragma once
// redis://[user:password@]host:port[/db]?prefix=dlock:&ttl=30s -- one Redis server.
// redis-sentinel://s1:26379,s2:26379/NAME[/db]?... -- the master Redis Sentinel names, found
// again at each new connection (redis_sentinel.hpp). Both take ?replicas=N: acquires and
// renewals count once N replicas acknowledged them (WAIT; docs/redis.md).
// redlock://h1:p1,h2:p2,h3:p3[/db]?prefix=... -- Redlock over N (odd, >= 3) independent
// masters: the same scripts on every master, an entry holds where it holds on a majority.
//
// What Redlock does NOT promise (say it to users plainly):
//  - Safety depends on timing: a holder that pauses (GC, SIGSTOP, swap) past its lease, or
//    clocks whose rates differ by more than the drift allowance (1% of the TTL + 2 ms), can
//    overlap with the next holder. Use the fencing token at the resource.
//  - Fencing tokens: a grant's token is above every counter an answering master reports and
//    is raised on every answering master, so one master losing its data cannot make a token
//    repeat while a master that kept the last token answers the next grant. If every master
//    that knew it loses its data first (a majority restarted empty at once), or is out of
//    the next client's reach, a token can repeat. Restart an empty master only after the
//    longest TTL in use (else an old holder can still overlap a new one).
//  - Not Redis Cluster, not replicas: each URL host must be an independent master; a
//    failover to an asynchronous replica can lose the lock (and the counter) on that master.
//  - Waiting is fair per master but not across masters: concurrent enqueues may be ordered
//    differently; such a split is resolved by re-queueing, which costs those entries their
//    place.

#include <cstdint>
#include <memory>

#include "core/backend.hpp"
#include "core/url.hpp"

namespace dlock::detail {

result<std::unique_ptr<backend_session>> open_redis(const url& u, const session_info& info);

}  // namespace dlock::detail
