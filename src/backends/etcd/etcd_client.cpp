// The gRPC side of the etcd backend: the only file that includes the generated code.
#include "backends/etcd/etcd_client.hpp"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <atomic>
#include <limits>
#include <mutex>
#include <set>

#include "backends/etcd/etcd_channel.hpp"
#include "backends/etcd/etcd_keys.hpp"
#include "backends/etcd/etcd_watch.hpp"
#include "core/caller_deadline.hpp"
#include "core/thread_room.hpp"
#include "etcd_rpc.grpc.pb.h"

namespace dlock::detail::etcd {
namespace {

namespace pb = etcdserverpb;

std::chrono::system_clock::time_point wall_deadline(steady::time_point d) {
  auto now = steady::now();
  auto left = d <= now ? steady::duration::zero() : d - now;
  left = std::min<steady::duration>(left, std::chrono::hours{24});
  return std::chrono::system_clock::now() +
         std::chrono::duration_cast<std::chrono::system_clock::duration>(left);
}

range_result to_range(const pb::RangeResponse& r) {
  range_result out;
  out.revision = r.header().revision();
  out.more = r.more();
  out.kvs.reserve(static_cast<std::size_t>(r.kvs_size()));
  for (const auto& kv : r.kvs()) {
    out.kvs.push_back(
        {kv.key(), kv.value(), kv.create_revision(), kv.mod_revision(), kv.version(), kv.lease()});
  }
  return out;
}

void fill_range(pb::RangeRequest& r, const std::string& begin, const std::string& end,
                bool keys_only) {
  r.set_key(begin);
  r.set_range_end(end);
  r.set_sort_order(pb::RangeRequest::ASCEND);
  r.set_sort_target(pb::RangeRequest::CREATE);
  r.set_keys_only(keys_only);
}

class grpc_client final : public client {
 public:
  explicit grpc_client(const config& c)
      : cfg_(c),
        timeout_(c.request_timeout),
        channel_(make_channel(c)),
        kv_(pb::KV::NewStub(channel_)),
        lease_(pb::Lease::NewStub(channel_)),
        auth_(pb::Auth::NewStub(channel_)) {}

  // Auth.Authenticate as the URL's user, when it names one: its token goes with every call.
  // Called at open, and again when the server refuses the token (expired after the server's
  // --auth-token-ttl unused, or dropped when auth was disabled and enabled again). `seen` is
  // the token the refused call carried: a login another thread already made is not repeated.
  result<void> log_in(const std::string& seen = {}) {
    if (cfg_.user.empty()) return {};
    std::lock_guard login(login_mu_);
    if (current_token() != seen) return {};
    pb::AuthenticateRequest req;
    req.set_name(cfg_.user);
    req.set_password(cfg_.password);
    pb::AuthenticateResponse resp;
    grpc::ClientContext ctx;
    ctx.set_deadline(wall_deadline(steady::now() + timeout_));
    ride_out_reconnects(ctx);
    if (auto reg = track(&ctx, false); !reg) return fail(reg.error());
    auto st = auth_->Authenticate(&ctx, req, &resp);
    untrack(&ctx);
    if (st.error_code() == grpc::StatusCode::FAILED_PRECONDITION &&
        st.error_message().find("authentication is not enabled") != std::string::npos) {
      return {};  // as Go's client: a user for a cluster without auth is no error
    }
    if (st.error_code() == grpc::StatusCode::INVALID_ARGUMENT &&
        st.error_message().find("authentication failed") != std::string::npos) {
      return fail(errc::permission_denied, "etcd: user '" + cfg_.user + "' cannot log in to " +
                                               cfg_.where + ": " + st.error_message());
    }
    if (!st.ok()) return fail(failed(st, "Authenticate as '" + cfg_.user + "'"));
    answered_ = true;
    std::lock_guard g(mu_);
    token_ = resp.token();
    return {};
  }

  ~grpc_client() override { shut_down(); }

  result<std::pair<std::int64_t, std::int64_t>> grant(std::int64_t ttl_seconds) override {
    pb::LeaseGrantRequest req;
    req.set_ttl(ttl_seconds);
    pb::LeaseGrantResponse resp;
    auto st = unary("LeaseGrant", steady::now() + timeout_,
                    [&](grpc::ClientContext* ctx) { return lease_->LeaseGrant(ctx, req, &resp); });
    if (!st) return fail(st.error());
    if (!resp.error().empty() || resp.id() == 0) {
      return fail(errc::backend_error, "etcd LeaseGrant: " + resp.error());
    }
    return std::pair{resp.id(), resp.ttl()};
  }

  result<void> revoke(std::int64_t lease, steady::time_point deadline) override {
    pb::LeaseRevokeRequest req;
    req.set_id(lease);
    pb::LeaseRevokeResponse resp;
    auto st = unary("LeaseRevoke", deadline,
                    [&](grpc::ClientContext* ctx) { return lease_->LeaseRevoke(ctx, req, &resp); });
    if (!st && st.error().code == make_error_code(errc::session_expired)) return {};
    return st;
  }

  // One short-lived stream per round: its deadline bounds the whole round, which a read on a
  // long-lived synchronous stream could not be. Keep-alives are no raft writes, so the cost is
  // one HTTP/2 stream on the open connection.
  result<std::int64_t> keep_alive(std::span<const std::int64_t> leases,
                                  std::optional<steady::time_point> deadline) override {
    const auto until = deadline.value_or(steady::now() + timeout_);
    std::string refused;
    auto r = keep_alive_round(leases, refused, until);
    if (!r && !refused.empty()) {
      if (auto l = log_in(refused); !l) return fail(l.error());
      r = keep_alive_round(leases, refused, until);
    }
    return r;
  }

  // `refused`: set to the token sent when the server refused it.
  result<std::int64_t> keep_alive_round(std::span<const std::int64_t> leases, std::string& refused,
                                        steady::time_point until) {
    grpc::ClientContext ctx;
    ctx.set_deadline(wall_deadline(until));
    ride_out_reconnects(ctx);
    auto reg = track(&ctx);
    if (!reg) return fail(reg.error());
    auto stream = lease_->LeaseKeepAlive(&ctx);
    std::int64_t least = std::numeric_limits<std::int64_t>::max();
    std::string lost;
    bool broken = false;
    for (auto id : leases) {
      pb::LeaseKeepAliveRequest req;
      req.set_id(id);
      pb::LeaseKeepAliveResponse resp;
      if (!stream->Write(req) || !stream->Read(&resp)) {
        broken = true;
        break;
      }
      if (resp.ttl() <= 0) {
        // In hex, as the entry's key, `etcdctl lease` and `dlock status` name it.
        lost = "etcd lease " + lease_key("", id) + " is gone (keep-alive answered TTL " +
               std::to_string(resp.ttl()) + ")";
        break;
      }
      least = std::min(least, resp.ttl());
    }
    stream->WritesDone();
    if (broken || !lost.empty()) ctx.TryCancel();
    auto st = stream->Finish();
    untrack(&ctx);
    if (!lost.empty()) return fail(errc::session_expired, lost);
    if (broken) {
      if (st.ok()) st = grpc::Status(grpc::StatusCode::UNAVAILABLE, "stream ended");
      if (!cfg_.user.empty() && stale_token(st)) refused = *reg;
      return fail(failed(st, "LeaseKeepAlive"));
    }
    answered_ = true;
    return least;
  }

  result<txn_result> txn(const std::vector<txn_compare>& compare,
                         const std::vector<txn_op>& success, const std::vector<txn_op>& failure,
                         std::optional<steady::time_point> deadline) override {
    pb::TxnRequest req;
    for (const auto& c : compare) {
      auto* cmp = req.add_compare();
      cmp->set_key(c.key);
      cmp->set_result(pb::Compare::EQUAL);
      if (c.on_value) {
        cmp->set_target(pb::Compare::VALUE);
        cmp->set_value(c.value);
      } else {
        cmp->set_target(pb::Compare::CREATE);
        cmp->set_create_revision(c.create_revision);
      }
    }
    auto add = [](const std::vector<txn_op>& ops, auto&& next) {
      for (const auto& o : ops) {
        auto* r = next();
        switch (o.kind) {
          case txn_op::put: {
            auto* p = r->mutable_request_put();
            p->set_key(o.key);
            p->set_value(o.value);
            p->set_lease(o.lease);
            break;
          }
          case txn_op::range: {
            auto* q = r->mutable_request_range();
            fill_range(*q, o.key, o.end, false);
            q->set_limit(o.limit);
            if (o.newest_first) q->set_sort_order(pb::RangeRequest::DESCEND);
            q->set_max_create_revision(o.max_create_revision);
            break;
          }
          case txn_op::del:
            r->mutable_request_delete_range()->set_key(o.key);
            break;
        }
      }
    };
    add(success, [&] { return req.add_success(); });
    add(failure, [&] { return req.add_failure(); });
    pb::TxnResponse resp;
    auto st = unary("Txn", deadline.value_or(steady::now() + timeout_),
                    [&](grpc::ClientContext* ctx) { return kv_->Txn(ctx, req, &resp); });
    if (!st) return fail(st.error());
    txn_result out;
    out.succeeded = resp.succeeded();
    out.revision = resp.header().revision();
    for (const auto& op : resp.responses()) {
      if (op.has_response_range()) {
        out.ranges.push_back(to_range(op.response_range()));
        out.ranges.back().revision = out.revision;
      }
    }
    return out;
  }

  result<range_result> range(const std::string& begin, const std::string& end,
                             bool keys_only) override {
    pb::RangeRequest req;
    fill_range(req, begin, end, keys_only);
    pb::RangeResponse resp;
    auto st = unary("Range", steady::now() + timeout_,
                    [&](grpc::ClientContext* ctx) { return kv_->Range(ctx, req, &resp); });
    if (!st) return fail(st.error());
    return to_range(resp);
  }

  result<std::int64_t> del(const std::string& key, steady::time_point deadline) override {
    pb::DeleteRangeRequest req;
    req.set_key(key);
    pb::DeleteRangeResponse resp;
    auto st = unary("DeleteRange", deadline,
                    [&](grpc::ClientContext* ctx) { return kv_->DeleteRange(ctx, req, &resp); });
    if (!st) return fail(st.error());
    return resp.deleted();
  }

  result<bool> await_delete(std::span<const watched_key> keys, steady::time_point deadline,
                            std::stop_token stop) override {
    return hub_.await_delete(keys, deadline, std::move(stop),
                             [this](const std::string& key, std::int64_t rev) -> result<bool> {
                               auto r = range(key, {}, true);
                               if (!r) return fail(r.error());
                               return !r->kvs.empty() && r->kvs[0].create_revision == rev;
                             });
  }

  result<bool> await_change(const std::string& begin, const std::string& end,
                            std::int64_t from_revision, steady::time_point deadline,
                            std::stop_token stop) override {
    return hub_.await_change(begin, end, from_revision, deadline, std::move(stop));
  }

  void shut_down() noexcept override {
    hub_.shut_down();
    std::lock_guard g(mu_);
    closed_ = true;
    for (auto* c : calls_) c->TryCancel();
  }

 private:
  template <class F>
  result<void> unary(std::string_view what, steady::time_point deadline, F&& call) {
    for (int attempt = 0;; ++attempt) {
      grpc::ClientContext ctx;
      ctx.set_deadline(wall_deadline(within_caller_deadline(deadline)));
      ride_out_reconnects(ctx);
      auto reg = track(&ctx);
      if (!reg) return fail(reg.error());
      auto st = call(&ctx);
      untrack(&ctx);
      if (st.ok()) {
        answered_ = true;
        return {};
      }
      if (attempt == 0 && !cfg_.user.empty() && stale_token(st)) {
        if (auto l = log_in(*reg); !l) return fail(l.error());
        continue;
      }
      return fail(failed(st, what));
    }
  }

  // A watch the server ended for a refused token: log in again for the calls that follow.
  void renew_if_stale(const grpc::Status& st, const std::string& sent) {
    if (!cfg_.user.empty() && stale_token(st)) (void)log_in(sent);
  }

  // Once a call of this client has succeeded (the member, TLS and the user are right), a call
  // waits for the channel to be ready, up to its deadline, instead of failing at once.
  //
  // Why: after a failed connection attempt pick_first keeps the channel in TRANSIENT_FAILURE
  // until one succeeds, and a call without wait_for_ready then fails at once without polling.
  // gRPC's synchronous API has no thread of its own reading sockets: a connection attempt
  // progresses only while some call polls the channel (gRPC's backup poller runs only every
  // few seconds). So after 2-3 s of "connection refused" (a member restarting, a proxy gone and
  // back) every reconnect ran out unseen ("tcp handshaker shutdown"), each keep-alive and release
  // failed at once, and the holder was told lost at its TTL with the member long back (a
  // tester's report; etcd_reconnect_test.cpp). A waiting call polls: the attempt in progress
  // completes and the call goes through as soon as the member answers. Before the first
  // success calls still fail fast, so a member that is down, a TLS refusal or a wrong user
  // are reported at open with gRPC's own words (etcd_channel.hpp).
  void ride_out_reconnects(grpc::ClientContext& ctx) const {
    ctx.set_wait_for_ready(answered_.load());
  }

  failure failed(const grpc::Status& st, std::string_view what) {
    return status_failure(st, what, cfg_, answered_.load());
  }

  std::string current_token() {
    std::lock_guard g(mu_);
    return token_;
  }

  // Registers a call for shut_down() and gives it the auth token (none for the log-in
  // itself); returns the token sent.
  result<std::string> track(grpc::ClientContext* ctx, bool with_token = true) {
    std::lock_guard g(mu_);
    if (closed_) return fail(errc::backend_unavailable, "etcd: the session's client is closed");
    calls_.insert(ctx);
    if (with_token && !token_.empty()) ctx->AddMetadata("token", token_);
    return token_;
  }
  void untrack(grpc::ClientContext* ctx) {
    std::lock_guard g(mu_);
    calls_.erase(ctx);
  }

  const config cfg_;
  const std::chrono::milliseconds timeout_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<pb::KV::Stub> kv_;
  std::unique_ptr<pb::Lease::Stub> lease_;
  std::unique_ptr<pb::Auth::Stub> auth_;
  std::atomic<bool> answered_{false};  // a call has succeeded: the TLS set-up is right
  std::mutex login_mu_;                // one log-in at a time
  std::mutex mu_;
  bool closed_{false};
  std::string token_;  // the auth token, "" without a user (or auth off on the server)
  std::set<grpc::ClientContext*> calls_;
  // Last: its reader thread calls back into the members above until it is joined.
  watch_hub hub_{channel_, watch_hooks{
                               [this](grpc::ClientContext& ctx) { return track(&ctx); },
                               [this](grpc::ClientContext& ctx) { untrack(&ctx); },
                               [this](const grpc::Status& st, const std::string& token) {
                                 renew_if_stale(st, token);
                               },
                           }};
};

}  // namespace

result<std::unique_ptr<client>> client::open(const config& c) {
  if (auto r = refuse_in_forked_child(); !r) return fail(r.error());
  if (auto r = refuse_short_of_descriptors(); !r) return fail(r.error());
  // gRPC starts threads of its own (executor, timers, resolver) and hangs or aborts when it
  // cannot (a tester's open at a thread limit never returned).
  if (auto r = room_for_threads(6, "etcd"); !r) return fail(r.error());
  auto g = std::make_unique<grpc_client>(c);
  if (auto l = g->log_in(); !l) return fail(l.error());
  return std::unique_ptr<client>(std::move(g));
}

}  // namespace dlock::detail::etcd
