#pragma once
// The gRPC channel to an etcd cluster (plain or TLS) and what gRPC's statuses mean to dlock:
// the part of the client that needs gRPC but not the generated code.

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string_view>

#include "backends/etcd/etcd_config.hpp"
#include "core/result.hpp"

namespace dlock::detail::etcd {

// One channel over the config's target, TLS for etcds:// (the CA, and the client's certificate
// when given), reconnecting within a fraction of the request timeout.
std::shared_ptr<grpc::Channel> make_channel(const config& c);

// Refuses (unsupported) in a forked child of a process that made a channel: gRPC's threads and
// polling descriptors stay with the parent, and a child's call waited forever or broke the
// parent's own ("Closure already scheduled", an abort). A child that exec()s is unaffected.
result<void> refuse_in_forked_child();
// backend_unavailable when the process has too few descriptors free for gRPC, which aborts
// the process when one it needs cannot be had.
result<void> refuse_short_of_descriptors();

// A failed call as dlock's error. UNAVAILABLE, DEADLINE_EXCEEDED, RESOURCE_EXHAUSTED, ABORTED,
// CANCELLED: backend_unavailable; a lease the server does not know: session_expired;
// UNAUTHENTICATED, PERMISSION_DENIED, a refused log-in and, over TLS before any call of the
// client has succeeded (`answered` false), a failed or cut handshake (a server certificate the
// CA does not sign, a client certificate refused or missing): permission_denied, as no retry
// mends them; the rest backend_error. Once a call has succeeded, the same transport errors are
// a member restarting or going away: backend_unavailable.
failure status_failure(const grpc::Status& s, std::string_view what, const config& c,
                       bool answered);

// True when the server refused the auth token it was sent (expired, or the auth store changed):
// log in again and retry.
bool stale_token(const grpc::Status& s);

}  // namespace dlock::detail::etcd
