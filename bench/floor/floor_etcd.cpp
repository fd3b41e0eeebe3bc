// etcd: the Txn dlock's uncontended acquire sends, by hand -- Go's tryAcquire: create the key
// if absent, bound to a lease, and read the lock's oldest key (its `getOwner`: the prefix
// sorted by create revision, limit 1); else read the key -- then one DeleteRange, over gRPC on
// one channel with the generated stubs the backend uses (etcd_rpc.proto). The value is as long
// as dlock's entry record. The lease is granted once, as a dlock session's is.
#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include <stdexcept>
#include <string>

#include "etcd_rpc.grpc.pb.h"
#include "floor_common.hpp"

namespace dlock::floor {
namespace {

namespace pb = etcdserverpb;

class etcd_client final : public client {
 public:
  explicit etcd_client(const target& t)
      : channel_(grpc::CreateChannel(t.host + ":" + std::to_string(t.port ? t.port : 2379),
                                     grpc::InsecureChannelCredentials())),
        kv_(pb::KV::NewStub(channel_)),
        lease_(pb::Lease::NewStub(channel_)),
        prefix_((t.path.empty() ? std::string("dlock-floor") : t.path) + "/"),
        key_(prefix_ + "floor") {
    prefix_end_ = prefix_;
    prefix_end_.back() = static_cast<char>(prefix_end_.back() + 1);
    // As long as a dlock record: "dlock1\ne\n<entry id>\n<host>:<pid>".
    char host[64] = "localhost";
    (void)gethostname(host, sizeof host - 1);
    value_ = "dlock1\ne\n5f2a9c0e1b7d4e63\n" + std::string(host) + ":" + std::to_string(getpid());
    pb::LeaseGrantRequest req;
    req.set_ttl(30);
    pb::LeaseGrantResponse resp;
    grpc::ClientContext ctx;
    check(lease_->LeaseGrant(&ctx, req, &resp), "LeaseGrant");
    lease_id_ = resp.id();
  }

  ~etcd_client() override {
    pb::LeaseRevokeRequest req;
    req.set_id(lease_id_);
    pb::LeaseRevokeResponse resp;
    grpc::ClientContext ctx;
    (void)lease_->LeaseRevoke(&ctx, req, &resp);
  }

  void cycle() override {
    pb::TxnRequest txn;
    auto* cmp = txn.add_compare();
    cmp->set_key(key_);
    cmp->set_result(pb::Compare::EQUAL);
    cmp->set_target(pb::Compare::CREATE);
    cmp->set_create_revision(0);
    auto* put = txn.add_success()->mutable_request_put();
    put->set_key(key_);
    put->set_lease(lease_id_);
    put->set_value(value_);
    auto* owner = txn.add_success()->mutable_request_range();
    owner->set_key(prefix_);
    owner->set_range_end(prefix_end_);
    owner->set_sort_target(pb::RangeRequest::CREATE);
    owner->set_sort_order(pb::RangeRequest::ASCEND);
    owner->set_limit(1);
    txn.add_failure()->mutable_request_range()->set_key(key_);
    pb::TxnResponse tr;
    grpc::ClientContext c1;
    check(kv_->Txn(&c1, txn, &tr), "Txn");
    if (!tr.succeeded()) throw std::runtime_error("etcd: key '" + key_ + "' already held");
    if (tr.responses_size() != 2 || tr.responses(1).response_range().kvs_size() != 1 ||
        tr.responses(1).response_range().kvs(0).key() != key_) {
      throw std::runtime_error("etcd: another key is older than '" + key_ + "' (" + prefix_ + ")");
    }
    pb::DeleteRangeRequest del;
    del.set_key(key_);
    pb::DeleteRangeResponse dr;
    grpc::ClientContext c2;
    check(kv_->DeleteRange(&c2, del, &dr), "DeleteRange");
  }

  std::string what() const override {
    return "grpc++: Txn (create if absent, with a lease, + the oldest key) + DeleteRange, one "
           "channel";
  }

 private:
  static void check(const grpc::Status& s, const char* what) {
    if (!s.ok()) throw std::runtime_error(std::string("etcd ") + what + ": " + s.error_message());
  }

  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<pb::KV::Stub> kv_;
  std::unique_ptr<pb::Lease::Stub> lease_;
  std::string prefix_;
  std::string prefix_end_;
  std::string key_;
  std::string value_;
  std::int64_t lease_id_{0};
};

}  // namespace

std::unique_ptr<client> make_etcd(const target& t) { return std::make_unique<etcd_client>(t); }

}  // namespace dlock::floor
