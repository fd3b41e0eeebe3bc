#pragma once
// The etcd member shared by the tests of one executable (started on first use, stopped at
// exit), and helpers that reach behind a dlock session.

#include <dlock/dlock.hpp>
#include <string>

#include "support/etcd_server.hpp"

namespace dlock::test {

etcd_server& shared_etcd();

// Revokes every lease of the etcd session behind `s` from the server side, as the lease's end
// would: its keys go at once.
void expire_etcd_session(const dlock::session& s, const etcd_server& server);

// The sum of the samples of `metric` (its name up to a '{' or ' ') in the shared member's
// /metrics whose labels contain `label` ("" for all): how the tests count server requests
// and watchers without timing anything.
double etcd_metric_sum(const std::string& metric, const std::string& label = {});

}  // namespace dlock::test
